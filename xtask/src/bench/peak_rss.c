/* `peak_rss COMMAND [ARGS]`: runs COMMAND and writes `peak_rss_kib N` (the largest
 * resident set of COMMAND and the children it waited for) as the last line of stderr.
 * The bench measures through this small process because a child's peak counts the
 * memory of the process it was forked from up to its exec: forked from the bench
 * itself, every command would show at least the bench's own size. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		return 2;
	fprintf(stderr, "peak_rss_kib %ld\n", ru.ru_maxrss);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
