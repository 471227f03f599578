/* The arm64 counterpart of the i386 program in decode.rs's 32-bit test: an arm32
   (compat) task, built static with zig's musl by `cargo xtask test --kernel arm64`.
   Its calls go through the arm table, and two of ARM's private calls (0xf0000 + n)
   through their own indexes: musl's start-up sets the thread pointer with set_tls
   (0xf0005), and the program flushes a range with cacheflush (0xf0002). */
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* musl names only the time64 call for arm; the 32-bit one is 265 there. */
#ifndef SYS_clock_nanosleep
#define SYS_clock_nanosleep 265
#endif
#define ARM_CACHEFLUSH 0xf0002

int main(void) {
    for (int i = 0; i < 3; i++)
        syscall(SYS_getppid);
    /* The 32-bit clock_nanosleep: its timespec is two 32-bit fields. */
    struct { int sec, nsec; } ts = {0, 1000};
    syscall(SYS_clock_nanosleep, CLOCK_REALTIME, 0, &ts, 0);
    int fd = syscall(SYS_openat, AT_FDCWD, "/etc/hostname", O_RDONLY);
    char b[8];
    read(fd, b, sizeof b);
    close(fd);
    static char code[64];
    syscall(ARM_CACHEFLUSH, code, code + sizeof code, 0);
    return 3;
}
