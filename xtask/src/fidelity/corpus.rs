//! The programs the fidelity tool traces: file walkers, archivers and compressors (some
//! with threads), compilers and build tools, version control, a database, interpreters,
//! shells and pipelines, network clients and servers on loopback, inotify, crypto,
//! signals and process groups, and a static i386 program. Each runs in a scratch
//! directory of its own, which holds `file.txt` (100 lines), its `files`, and what its
//! `setup` made there (run untraced, before the three traced runs).

/// One program of the corpus.
pub struct Program {
    pub name: &'static str,
    /// Files written into the scratch directory: (name, contents).
    pub files: &'static [(&'static str, &'static str)],
    /// A shell command run untraced in the directory first ("" for none).
    pub setup: &'static str,
    /// The command traced, through `/bin/sh -c 'exec …'`.
    pub cmd: &'static str,
    /// Commands it needs, each with the Debian package that has it.
    pub needs: &'static [(&'static str, &'static str)],
}

const fn p(name: &'static str, cmd: &'static str) -> Program {
    Program {
        name,
        files: &[],
        setup: "",
        cmd,
        needs: &[],
    }
}

const fn with(
    name: &'static str,
    setup: &'static str,
    cmd: &'static str,
    needs: &'static [(&'static str, &'static str)],
) -> Program {
    Program {
        name,
        files: &[],
        setup,
        cmd,
        needs,
    }
}

const GIT: &[(&str, &str)] = &[("git", "git")];
const GCC: &[(&str, &str)] = &[("gcc", "gcc")];
const SQLITE: &[(&str, &str)] = &[("sqlite3", "sqlite3")];
const OPENSSL: &[(&str, &str)] = &[("openssl", "openssl")];
const ZIP: &[(&str, &str)] = &[("zip", "zip"), ("unzip", "unzip")];

/// A repository with one commit of `file.txt`, in `r`.
const GIT_REPO: &str = "git init -q r && cp file.txt r/ && cd r && git add file.txt \
    && git -c user.name=f -c user.email=f@example.com commit -qm first";

/// A larger file, for the compressors that split their work among threads.
const BIG: &str = "seq 1 300000 > big.txt";

/// A one-request HTTP server on loopback that writes its port to `port` once it listens.
const SERVER: &str = "import http.server, socketserver
s = socketserver.TCPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)
with open('port.tmp', 'w') as f:
    f.write(str(s.server_address[1]))
import os
os.rename('port.tmp', 'port')
s.handle_request()
";

/// An i386 program making file, memory, time and process calls through the 32-bit ABI.
const I386: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    char buf[64];
    struct stat st;
    int fd = open("file.txt", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof buf) < 0 || fstat(fd, &st) < 0) return 1;
    void *m = mmap(0, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m != MAP_FAILED) munmap(m, 4096);
    lseek(fd, 10, SEEK_SET);
    close(fd);
    struct timespec ts = {0, 1000};
    nanosleep(&ts, 0);
    printf("%d\n", (int)getpid());
    return access("missing", F_OK) == 0;
}
"#;

pub const CORPUS: &[Program] = &[
    p("cat", "cat /etc/hostname"),
    p("ls", "ls -la /usr/share/doc/tar"),
    p("find", "find /usr/share/doc/tar /usr/share/doc/gzip"),
    p("tar", "tar -cf archive.tar file.txt"),
    p("gzip", "gzip -kf file.txt"),
    p("sort", "sort /etc/services"),
    p("head", "head -c 100 /etc/services"),
    p("stat", "stat /etc/hostname"),
    p("df", "df -h /"),
    p("du", "du -s /usr/share/doc/tar"),
    p("ps", "ps -p 1 -o comm="),
    p("id", "id"),
    p("date", "date"),
    p("uname", "uname -a"),
    p("getent", "getent hosts localhost"),
    p(
        "cp-mv-rm",
        "sh -c 'cp file.txt b.txt && mv b.txt c.txt && rm c.txt'",
    ),
    p("mkdir", "sh -c 'mkdir -p d/e && rmdir d/e d'"),
    p(
        "pipeline",
        "sh -c 'cat /etc/services | grep -c tcp | wc -l'",
    ),
    p("readlink", "readlink -f /proc/self/exe"),
    p("sleep", "sleep 0.01"),
    p("timeout", "timeout 5 sh -c 'kill -TERM $$'"),
    with("gcc", "", "gcc -c -x c -o empty.o /dev/null", GCC),
    p("python", "python3 -S -c 'import os; os.listdir(\".\")'"),
    p(
        "python-threads",
        "python3 -S -c 'import threading; t = threading.Thread(target=len, args=(\"a\",)); t.start(); t.join()'",
    ),
    p(
        "python-socket",
        "python3 -S -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b\"hi\"); a.recv(2)'",
    ),
    // Version control.
    with("git-init", "", "git init -q repo", GIT),
    with(
        "git-commit",
        "git init -q r && cp file.txt r/",
        "sh -c 'cd r && git add file.txt && git -c user.name=f -c user.email=f@example.com commit -qm m'",
        GIT,
    ),
    with(
        "git-status-log",
        GIT_REPO,
        "sh -c 'cd r && git status --short && git log --oneline'",
        GIT,
    ),
    with("git-clone", GIT_REPO, "git clone -q r r2", GIT),
    // Build tools.
    with(
        "make",
        "printf 'out.txt: file.txt\\n\\tcp file.txt out.txt\\n' > Makefile",
        "make -s",
        &[("make", "make"), ("gcc", "gcc")],
    ),
    with(
        "cc-link",
        "printf 'int main(void) { return 0; }\\n' > m.c",
        "sh -c 'gcc -o m m.c && ./m'",
        GCC,
    ),
    with(
        "ar",
        "gcc -c -x c -o e.o /dev/null",
        "ar rcs lib.a e.o",
        GCC,
    ),
    // A database.
    with(
        "sqlite",
        "",
        "sqlite3 db.sqlite 'create table t(a); insert into t values (1); select * from t;'",
        SQLITE,
    ),
    with(
        "sqlite-wal",
        "",
        "sqlite3 db.sqlite 'pragma journal_mode=wal; create table t(a); insert into t values (2);'",
        SQLITE,
    ),
    // Network clients and servers on loopback.
    Program {
        name: "http-loopback",
        files: &[("server.py", SERVER)],
        setup: "",
        cmd: "sh -c 'python3 server.py 2>/dev/null & while [ ! -s port ]; do sleep 0.05; done; \
              curl -s -o /dev/null http://127.0.0.1:$(cat port)/file.txt; wait'",
        needs: &[("curl", "curl")],
    },
    p(
        "python-http",
        "python3 -c 'import http.server, socketserver, threading, urllib.request; s = socketserver.TCPServer((\"127.0.0.1\", 0), http.server.SimpleHTTPRequestHandler); threading.Thread(target=s.handle_request).start(); urllib.request.urlopen(\"http://127.0.0.1:%d/file.txt\" % s.server_address[1]).read()'",
    ),
    p(
        "udp",
        "python3 -S -c 'import socket; a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.bind((\"127.0.0.1\", 0)); b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); b.sendto(b\"x\", a.getsockname()); a.recvfrom(8); b.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1); b.shutdown(socket.SHUT_RDWR)'",
    ),
    p(
        "unix-fds",
        "python3 -S -c 'import socket, os; a, b = socket.socketpair(); r, w = os.pipe(); socket.send_fds(a, [b\"x\"], [r, w]); socket.recv_fds(b, 8, 2); a.sendmsg([b\"y\"]); b.recv(1, socket.MSG_DONTWAIT)'",
    ),
    p(
        "asyncio",
        "python3 -c 'import asyncio; asyncio.run(asyncio.sleep(0.001))'",
    ),
    // inotify: tail follows the file until the signal.
    p("inotify", "timeout -s INT 0.3 tail -f file.txt"),
    // Compressors, with threads.
    with(
        "xz-threads",
        BIG,
        "xz -T2 -kf big.txt",
        &[("xz", "xz-utils")],
    ),
    with(
        "zstd-threads",
        BIG,
        "zstd -T2 -qf big.txt",
        &[("zstd", "zstd")],
    ),
    with(
        "sort-parallel",
        BIG,
        // In memory: a temporary file's name is random, and differs between runs.
        "sort --parallel=2 -o sorted.txt big.txt",
        &[],
    ),
    with("bzip2", "", "bzip2 -kf file.txt", &[("bzip2", "bzip2")]),
    with("lz4", "", "lz4 -qf file.txt file.lz4", &[("lz4", "lz4")]),
    with(
        "tar-extract",
        // The same archive for each tracer: no time in it.
        "tar --mtime=@0 -cf - file.txt | gzip -n > a.tgz && mkdir x",
        "tar -xzf a.tgz -C x",
        &[],
    ),
    // Crypto.
    with("openssl-dgst", "", "openssl dgst -sha256 file.txt", OPENSSL),
    with(
        "openssl-enc",
        "",
        "openssl enc -aes-256-cbc -pbkdf2 -pass pass:x -in file.txt -out file.enc",
        OPENSSL,
    ),
    with("openssl-rand", "", "openssl rand -hex 16", OPENSSL),
    p("sha256sum", "sha256sum file.txt"),
    // File utilities.
    p("dd", "dd if=file.txt of=out.bin bs=64 count=4 status=none"),
    with(
        "chmod-sticky",
        "mkdir d",
        "sh -c 'chmod 1777 d && stat -c %A d'",
        &[],
    ),
    p("chgrp", "chgrp root file.txt"),
    p("ln-readlink", "sh -c 'ln -sf file.txt l && readlink l'"),
    p("split", "split -l 10 file.txt part."),
    with("zip", "", "zip -q a.zip file.txt", ZIP),
    with(
        "unzip",
        "zip -q a.zip file.txt",
        "unzip -o -q a.zip -d out",
        ZIP,
    ),
    with(
        "diff",
        "cp file.txt b.txt && echo x >> b.txt",
        "diff file.txt b.txt",
        &[],
    ),
    with("file", "", "file file.txt", &[("file", "file")]),
    p("xargs", "sh -c 'ls | xargs -n1 echo'"),
    p(
        "truncate-sync",
        "sh -c 'truncate -s 4096 file.txt && sync file.txt'",
    ),
    // Interpreters.
    with(
        "perl",
        "",
        "perl -e 'opendir(my $d, \".\"); my @f = readdir($d); print scalar(@f), \"\\n\"'",
        &[("perl", "perl")],
    ),
    p("awk", "awk 'END { print NR }' file.txt"),
    with("jq", "", "jq -n '[1, 2] | add'", &[("jq", "jq")]),
    // Processes: limits, locks, priorities, affinity.
    p("ulimit", "sh -c 'ulimit -n 64; cat file.txt'"),
    with(
        "flock",
        "",
        "flock file.txt true",
        &[("flock", "util-linux")],
    ),
    with(
        "nice-taskset",
        "",
        "nice -n 5 taskset -c 0 true",
        &[("taskset", "util-linux")],
    ),
    // A static i386 program (x86_64 hosts with gcc-multilib).
    Program {
        name: "i386-static",
        files: &[("p32.c", I386)],
        setup: "gcc -m32 -static -O1 -o p32 p32.c",
        cmd: "./p32",
        needs: GCC,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_has_fifty_programs_with_names_of_their_own() {
        assert!(CORPUS.len() >= 50, "{}", CORPUS.len());
        let mut names: Vec<&str> = CORPUS.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), CORPUS.len(), "a name is used twice");
    }
}
