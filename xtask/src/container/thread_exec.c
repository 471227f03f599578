/* The smoke test's non-leader exec: prints its pid, then a second thread (not the
 * leader) execs this program again with an argument, which calls getppid 20 times.
 * After the exec that thread carries the leader's pid. Built static for the image. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static char *self;

static void *worker(void *arg) {
    struct timespec ts = {0, 50000000};
    char *argv[] = {self, "child", 0};
    (void)arg;
    nanosleep(&ts, 0);
    execv(self, argv);
    return 0;
}

int main(int argc, char **argv) {
    pthread_t t;
    if (argc > 1) {
        for (int i = 0; i < 20; i++) getppid();
        return 0;
    }
    printf("%d\n", (int)getpid());
    fflush(stdout);
    self = argv[0];
    pthread_create(&t, 0, worker, 0);
    for (;;) pause();
}
