// Linux headers that Glibc's Swift module leaves out.
#include <sys/timerfd.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>

// sendmmsg(2) and its `struct mmsghdr` are _GNU_SOURCE only, which Glibc's module is not built with:
// the kernel's layout, and the call made through syscall(2).
struct motiond_mmsghdr {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

static inline int motiond_sendmmsg(int fd, struct motiond_mmsghdr *messages, unsigned int count, int flags) {
    return (int)syscall(SYS_sendmmsg, fd, messages, count, flags);
}

// pipe2(2) is _GNU_SOURCE only too: through syscall(2), so that both ends are close-on-exec from the
// start (a pipe() then fcntl() leaks them into a child another thread spawns meanwhile).
static inline int motiond_pipe2(int fds[2], int flags) {
    return (int)syscall(SYS_pipe2, fds, flags);
}
