/* The 4-thread storm of `cargo xtask bench`: THREADS threads each make CALLS getppid
 * syscalls (argv[1] = CALLS), so that the tracer's per-thread state and its ring see
 * several writers at once. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 4

static long calls;

static void *storm(void *arg)
{
	(void)arg;
	for (long i = 0; i < calls; i++)
		syscall(SYS_getppid);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	calls = argc > 1 ? atol(argv[1]) : 100000;
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, storm, NULL))
			return 1;
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	return 0;
}
