/* A Windows process for the Windows tests (scripts/test-windows).
 *
 * `witness.exe` prints its own process id, then waits until its stdin reaches end of file and
 * exits. The tests, which run on the Linux side of wine, cannot learn the id of a Windows
 * process any other way; with it they record a live client or session the way Claude Code's on
 * Windows is, and end it by closing the pipe.
 *
 * `witness.exe <program> [args...]` plays a session's client: it prints its process id, waits
 * for one line on stdin (the test has recorded it as the client in between), then runs the rest
 * of its own command line as its child (stdout and stderr shared, stdin the NUL device) and
 * exits with the child's exit code. The tool so started runs inside that client's Windows
 * process tree, as one started from a session's Bash or PowerShell tool does. */
#include <windows.h>
#include <stdio.h>

/* The command line after the first token (this program's own name), or NULL when empty. */
static wchar_t *rest_of_command_line(void)
{
    wchar_t *p = GetCommandLineW();
    if (*p == L'"') {
        p++;
        while (*p && *p != L'"')
            p++;
        if (*p)
            p++;
    } else {
        while (*p && *p != L' ' && *p != L'\t')
            p++;
    }
    while (*p == L' ' || *p == L'\t')
        p++;
    return *p ? p : NULL;
}

static int run_child(wchar_t *command)
{
    SECURITY_ATTRIBUTES inherit = {sizeof inherit, NULL, TRUE};
    STARTUPINFOW si;
    PROCESS_INFORMATION pi;
    DWORD code = 1;
    HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE), err = GetStdHandle(STD_ERROR_HANDLE);
    HANDLE nul = CreateFileW(L"NUL", GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, &inherit,
                             OPEN_EXISTING, 0, NULL);
    SetHandleInformation(out, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    SetHandleInformation(err, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    ZeroMemory(&si, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = nul;
    si.hStdOutput = out;
    si.hStdError = err;
    if (!CreateProcessW(NULL, command, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
        fprintf(stderr, "witness: cannot start the child (error %lu)\n",
                (unsigned long)GetLastError());
        return 127;
    }
    WaitForSingleObject(pi.hProcess, INFINITE);
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hThread);
    CloseHandle(pi.hProcess);
    return (int)code;
}

int main(void)
{
    char buffer[256];
    wchar_t *command = rest_of_command_line();
    printf("%lu\n", (unsigned long)GetCurrentProcessId());
    fflush(stdout);
    if (command != NULL) {
        if (fgets(buffer, sizeof buffer, stdin) == NULL)
            return 126;
        return run_child(command);
    }
    while (fgets(buffer, sizeof buffer, stdin) != NULL) {
    }
    return 0;
}
