/* notify.h - the systemd notification protocol (Type=notify): readiness, watchdog, stopping. */
#ifndef FLAMED_NOTIFY_H
#define FLAMED_NOTIFY_H

#include <stdint.h>

/* Sends state ("READY=1", "WATCHDOG=1", "STOPPING=1", ...) to $NOTIFY_SOCKET. Returns 1 when sent,
 * 0 when not run under a service manager (no NOTIFY_SOCKET), or -errno. */
int notify_send(const char *state);

/* The watchdog interval systemd asks for ($WATCHDOG_USEC, when $WATCHDOG_PID is unset or ours), in
 * microseconds; 0 when there is none. */
uint64_t notify_watchdog_usec(void);

#endif
