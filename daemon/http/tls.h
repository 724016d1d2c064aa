/* tls.h - the certificate and key flamed's HTTPS serves (GnuTLS through libmicrohttpd): read from PEM
 * files, checked (the key readable by its owner only, and matching the certificate), and read again on
 * demand (SIGHUP) without dropping the listener: each handshake takes the pair loaded last. */
#ifndef FLAMED_HTTP_TLS_H
#define FLAMED_HTTP_TLS_H

#include <stddef.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#define TLS_MAX_CHAIN 16        /* certificates of one chain read from the file */
#define TLS_MAX_FILE (1u << 20) /* bytes of a certificate or key file read */

struct tls;

/* Reads cert_path (a PEM chain, the server's certificate first) and key_path (a PEM private key owned
 * by the user flamed runs as, not readable or writable by group or others), and client_ca_path (PEM certificates; NULL: none): then
 * every client must show a certificate one of them signed, or its handshake fails. Returns 0 with *out
 * set, or -errno with why in err (len bytes): -EPERM (the key's mode), -EINVAL (not PEM, or the key is
 * not the certificate's), -EFBIG, -ENOMEM or the open's error. */
int tls_new(const char *cert_path, const char *key_path, const char *client_ca_path, struct tls **out, char *err,
	    size_t len);

/* The client CA certificates (PEM, NUL-terminated) for MHD_OPTION_HTTPS_MEM_TRUST, or NULL when client
 * certificates are not asked for. */
const char *tls_client_ca(const struct tls *t);

/* Reads both files again; the new pair serves the next handshakes. On failure the pair loaded before
 * stays, and err says why. Thread-safe with the handshakes. Returns 0 or -errno as tls_new. */
int tls_reload(struct tls *t, char *err, size_t len);

/* The gnutls_certificate_retrieve_function2 to give libmicrohttpd (MHD_OPTION_HTTPS_CERT_CALLBACK),
 * serving t's current pair; one struct tls serves at a time (the last tls_new'd, until tls_free). */
gnutls_certificate_retrieve_function2 *tls_retrieve_function(void);

/* NULL is safe. */
void tls_free(struct tls *t);

#endif
