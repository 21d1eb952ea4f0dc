#include <systemd/sd-bus.h>
#include <systemd/sd-journal.h>
