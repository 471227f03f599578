/* The getppid storms of `cargo xtask bench`: THREADS threads (argv[2], default 4) each
 * make CALLS getppid syscalls (argv[1]), so that the tracer's per-thread state and its
 * ring see several writers at once (or one, with THREADS 1). The storm times itself
 * with the vDSO's monotonic clock, from before the first thread starts to after the
 * last ends, and says on stderr `loop_ns_per_call N`: the wall time per call as the
 * program feels it, with no tracer's start-up or exit in it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64

static long calls;

static void *storm(void *arg)
{
	(void)arg;
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	return NULL;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	calls = argc > 1 ? atol(argv[1]) : 100000;
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	if (calls <= 0 || threads < 1 || threads > MAX_THREADS)
		return 2;
	double start = now_ns();
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, storm, NULL))
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	double end = now_ns();
	fprintf(stderr, "loop_ns_per_call %.1f\n", (end - start) / ((double)calls * threads));
	return 0;
}
