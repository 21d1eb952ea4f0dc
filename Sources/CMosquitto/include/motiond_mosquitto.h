// libmosquitto, loaded when MQTT is configured and not before: the library, and the libssl and
// libcrypto it links (1.4 MB of a daemon at rest), are mapped only by a daemon that publishes.
#ifndef MOTIOND_MOSQUITTO_H
#define MOTIOND_MOSQUITTO_H

#include <mosquitto.h>

/// Loads libmosquitto.so.1 and the functions below, once (later calls return the first's result):
/// NULL when loaded, else what dlopen or dlsym said.
const char *motiond_mosquitto_load(void);

// The functions motiond calls, each `motiond_mosquitto_X` for mosquitto.h's `mosquitto_X`, with its
// arguments and result; call `motiond_mosquitto_load` first. One row each: return type, name,
// parameters, arguments, and `return` where there is a result.
#define MOTIOND_MOSQUITTO_FUNCTIONS(X) \
    X(int, lib_init, (void), (), return) \
    X(struct mosquitto *, new, (const char *id, bool clean_session, void *obj), (id, clean_session, obj), return) \
    X(void, destroy, (struct mosquitto *m), (m), ) \
    X(void, user_data_set, (struct mosquitto *m, void *obj), (m, obj), ) \
    X(void, connect_callback_set, (struct mosquitto *m, void (*f)(struct mosquitto *, void *, int)), (m, f), ) \
    X(void, disconnect_callback_set, (struct mosquitto *m, void (*f)(struct mosquitto *, void *, int)), (m, f), ) \
    X(void, publish_callback_set, (struct mosquitto *m, void (*f)(struct mosquitto *, void *, int)), (m, f), ) \
    X(int, int_option, (struct mosquitto *m, enum mosq_opt_t option, int value), (m, option, value), return) \
    X(int, threaded_set, (struct mosquitto *m, bool threaded), (m, threaded), return) \
    X(int, username_pw_set, (struct mosquitto *m, const char *username, const char *password), (m, username, password), return) \
    X(int, tls_set, \
        (struct mosquitto *m, const char *cafile, const char *capath, const char *certfile, const char *keyfile, \
            int (*pw_callback)(char *buf, int size, int rwflag, void *userdata)), \
        (m, cafile, capath, certfile, keyfile, pw_callback), return) \
    X(int, will_set, (struct mosquitto *m, const char *topic, int length, const void *payload, int qos, bool retain), \
        (m, topic, length, payload, qos, retain), return) \
    X(int, connect_async, (struct mosquitto *m, const char *host, int port, int keepalive), (m, host, port, keepalive), return) \
    X(int, publish, (struct mosquitto *m, int *mid, const char *topic, int length, const void *payload, int qos, bool retain), \
        (m, mid, topic, length, payload, qos, retain), return) \
    X(int, disconnect, (struct mosquitto *m), (m), return) \
    X(int, socket, (struct mosquitto *m), (m), return) \
    X(int, reconnect_async, (struct mosquitto *m), (m), return) \
    X(bool, want_write, (struct mosquitto *m), (m), return) \
    X(int, loop_read, (struct mosquitto *m, int max_packets), (m, max_packets), return) \
    X(int, loop_write, (struct mosquitto *m, int max_packets), (m, max_packets), return) \
    X(int, loop_misc, (struct mosquitto *m), (m), return) \
    X(const char *, connack_string, (int code), (code), return) \
    X(const char *, strerror, (int code), (code), return)

#define MOTIOND_MOSQUITTO_DECLARE(type, name, parameters, arguments, returns) type motiond_mosquitto_##name parameters;
MOTIOND_MOSQUITTO_FUNCTIONS(MOTIOND_MOSQUITTO_DECLARE)
#undef MOTIOND_MOSQUITTO_DECLARE

#endif
