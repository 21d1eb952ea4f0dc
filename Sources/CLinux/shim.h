// Linux headers that Glibc's Swift module leaves out.
#include <sys/timerfd.h>
#include <malloc.h>
