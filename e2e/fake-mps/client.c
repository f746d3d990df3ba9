/* client — fracgpu-sim-mps-control's client mode: one connection per command; see fake_mps.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fake_mps.h"

/* Sends one command and copies the reply to stdout; false when no daemon answers. */
static bool relay(const char *line)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/control", fake_mps_pipe_dir()) >= sizeof sa.sun_path)
        return false;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        fprintf(stderr, "Cannot find MPS control daemon process at %s: %s\n", sa.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    size_t len = strlen(line);
    bool ok = send(fd, line, len, MSG_NOSIGNAL) == (ssize_t)len && send(fd, "\n", 1, MSG_NOSIGNAL) == 1;
    shutdown(fd, SHUT_WR);
    char buf[4096];
    ssize_t n;
    while (ok && (n = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)n, stdout);
    close(fd);
    fflush(stdout);
    return ok;
}

int fake_mps_client(void)
{
    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] && !relay(line))
            return 1;
    }
    return 0;
}
