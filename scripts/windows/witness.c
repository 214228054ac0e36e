/* A Windows process that stays alive for the Windows tests (scripts/test-windows).
 *
 * It prints its own process id, then waits until its stdin reaches end of file and exits. The
 * tests, which run on the Linux side of wine, cannot learn the id of a Windows process any other
 * way; with it they record a live client or session the way Claude Code's on Windows is, and
 * end it by closing the pipe. */
#include <windows.h>
#include <stdio.h>

int main(void)
{
    char buffer[256];
    printf("%lu\n", (unsigned long)GetCurrentProcessId());
    fflush(stdout);
    while (fgets(buffer, sizeof buffer, stdin) != NULL) {
    }
    return 0;
}
