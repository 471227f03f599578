/* What a linker does to its output: a new file, grown, mapped shared and written page
 * by page, then replaced by the next one, forever. argv[1]: the directory. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE (8 << 20)

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    char path[4096], old[4096] = "";
    for (unsigned long n = 0;; n++) {
        snprintf(path, sizeof path, "%s/out-%lu", argv[1], n);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, SIZE) != 0)
            return 1;
        char *p = mmap(0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            return 1;
        for (long off = 0; off < SIZE; off += 4096) {
            memset(p + off, (int)n, 64);
            if (off % (1 << 20) == 0)
                usleep(2000);
        }
        munmap(p, SIZE);
        close(fd);
        if (old[0])
            unlink(old);
        strcpy(old, path);
    }
}
