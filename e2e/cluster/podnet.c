/*
 * podnet — the simulated pod network, preloaded (LD_PRELOAD) into the processes the simulated
 * kubelets run. Every pod has its own IP on the loopback network (127.X.Y.Z, all of which Linux
 * routes to lo), but shares the machine's single network namespace; so a listener on every address
 * (0.0.0.0 or ::) or on the loopback address is bound to the pod's IP instead ($FG_SIM_POD_IP),
 * as the pod's own network namespace would keep it apart, and two pods may listen on :8080 at
 * once. An IPv6 socket gets the pod IP's v4-mapped address. Everything else passes through. Only
 * libc is used, and nothing is instrumented, so it loads into any process, sanitized or not.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int bind_fn(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len);

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn *real_bind;
    if (!real_bind)
        real_bind = (bind_fn *)dlsym(RTLD_NEXT, "bind");
    const char *ip = getenv("FG_SIM_POD_IP");
    struct in_addr pod;
    if (!ip || !*ip || !addr || inet_pton(AF_INET, ip, &pod) != 1)
        return real_bind(fd, addr, len);
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in = *(const struct sockaddr_in *)addr;
        if (in.sin_addr.s_addr == htonl(INADDR_ANY) || in.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) {
            in.sin_addr = pod;
            return real_bind(fd, (const struct sockaddr *)&in, sizeof in);
        }
    } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6 = *(const struct sockaddr_in6 *)addr;
        if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr) || IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr)) {
            memset(&in6.sin6_addr, 0, sizeof in6.sin6_addr);
            in6.sin6_addr.s6_addr[10] = 0xff;
            in6.sin6_addr.s6_addr[11] = 0xff;
            memcpy(&in6.sin6_addr.s6_addr[12], &pod, 4);
            return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
        }
    }
    return real_bind(fd, addr, len);
}
