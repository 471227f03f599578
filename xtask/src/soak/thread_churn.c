/* Threads that come and go: four at a time make a few calls and exit, forever. */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *work(void *arg) {
    for (int i = 0; i < 20; i++)
        syscall(SYS_getppid);
    return arg;
}

int main(void) {
    for (;;) {
        pthread_t t[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&t[i], 0, work, 0);
        for (int i = 0; i < 4; i++)
            pthread_join(t[i], 0);
        usleep(1000);
    }
}
