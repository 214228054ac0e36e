/* A stand-in for Windows' bcryptprimitives.dll, for wine versions that lack it (wine 8.0).
 *
 * Rust's standard library (1.78 and later) fills its random seeds through ProcessPrng from
 * bcryptprimitives.dll; an exe whose imports cannot be resolved does not start. This DLL exports
 * that one function and answers it from RtlGenRandom (advapi32's SystemFunction036), which every
 * wine has. scripts/test-windows builds it with mingw and puts it into the test prefix only; it
 * is never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
