#include "motiond_mosquitto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

// Each function's address in the library, typed as mosquitto.h declares it.
#define POINTER(type, name, parameters, arguments, returns) static __typeof__(mosquitto_##name) *loaded_##name;
MOTIOND_MOSQUITTO_FUNCTIONS(POINTER)
#undef POINTER

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *failure;

static void load(void) {
    // RTLD_LOCAL: its symbols (and libcrypto's) stay out of the process's global scope.
    void *library = dlopen("libmosquitto.so.1", RTLD_NOW | RTLD_LOCAL);
    // dlerror's text lives until the next dl call of the thread: kept as a copy.
    if (library == NULL) {
        failure = strdup(dlerror());
        return;
    }
#define LOAD(type, name, parameters, arguments, returns) \
    if ((loaded_##name = (__typeof__(loaded_##name))dlsym(library, "mosquitto_" #name)) == NULL) { \
        failure = strdup(dlerror()); \
        return; \
    }
    MOTIOND_MOSQUITTO_FUNCTIONS(LOAD)
#undef LOAD
}

const char *motiond_mosquitto_load(void) {
    pthread_once(&once, load);
    return failure;
}

#define CALL(type, name, parameters, arguments, returns) \
    type motiond_mosquitto_##name parameters { returns loaded_##name arguments; }
MOTIOND_MOSQUITTO_FUNCTIONS(CALL)
#undef CALL
