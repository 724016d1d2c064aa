/* tls.c - the certificate and key flamed's HTTPS serves (see tls.h).
 *
 * libmicrohttpd hands the handshake's choice of certificate to a GnuTLS retrieve function, which has no
 * argument of ours: the pair served is the one `current` points to. A reload puts a new pair there; the
 * pairs it replaced are kept (a handshake may still hold their pointers) up to RETIRED_MAX, then the
 * oldest is freed. */
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http/tls.h"

#define RETIRED_MAX 32 /* pairs replaced by reloads kept alive for handshakes that took them */

/* One certificate chain with its key, as the retrieve function returns them. */
struct pair {
	gnutls_pcert_st certs[TLS_MAX_CHAIN];
	unsigned ncerts;
	gnutls_privkey_t key;
};

struct tls {
	char *cert_path, *key_path;
	gnutls_datum_t client_ca; /* PEM; data NULL: no client certificates asked for */
	pthread_mutex_t lock;
	struct pair *current;
	struct pair *retired[RETIRED_MAX];
	unsigned nretired;
};

static pthread_mutex_t serving_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls *serving;

static void pair_free(struct pair *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->ncerts; i++)
		gnutls_pcert_deinit(&p->certs[i]);
	if (p->key)
		gnutls_privkey_deinit(p->key);
	free(p);
}

/* Reads the whole file path (at most TLS_MAX_FILE bytes) into *data (gnutls_free it). With private, the
 * file must not be readable or writable by group or others. Returns 0 or -errno, why in err. */
static int read_file(const char *path, bool private, gnutls_datum_t *data, char *err, size_t len)
{
	struct stat st;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0) {
		int e = errno;

		snprintf(err, len, "%s: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, len, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if (private && st.st_uid != geteuid()) {
		snprintf(err, len, "%s: the private key belongs to uid %u, not to the user flamed runs as (%u): "
			 "chown it", path, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	if (private && (st.st_mode & (S_IRWXG | S_IRWXO))) {
		snprintf(err, len, "%s: the private key is readable or writable by group or others (mode %04o): "
			 "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_size > TLS_MAX_FILE) {
		snprintf(err, len, "%s: over %u bytes", path, TLS_MAX_FILE);
		close(fd);
		return -EFBIG;
	}
	data->data = gnutls_malloc((size_t)st.st_size + 1);
	if (!data->data) {
		close(fd);
		return -ENOMEM;
	}
	got = read(fd, data->data, (size_t)st.st_size);
	close(fd);
	if (got != st.st_size) {
		snprintf(err, len, "%s: short read", path);
		gnutls_free(data->data);
		return -EIO;
	}
	data->data[got] = '\0';
	data->size = (unsigned)got;
	return 0;
}

/* Reads and checks a pair. Returns 0 with *out, or -errno with why in err. */
static int pair_load(const char *cert_path, const char *key_path, struct pair **out, char *err, size_t len)
{
	gnutls_datum_t cert = { 0 }, key = { 0 };
	gnutls_certificate_credentials_t check = NULL;
	struct pair *p = calloc(1, sizeof(*p));
	int r, e;

	if (!p)
		return -ENOMEM;
	if ((e = read_file(cert_path, false, &cert, err, len)) || (e = read_file(key_path, true, &key, err, len)))
		goto out;
	e = -EINVAL;
	/* The key must be the certificate's: GnuTLS's own check, on a credentials set made for it. */
	if ((r = gnutls_certificate_allocate_credentials(&check)) < 0 ||
	    (r = gnutls_certificate_set_x509_key_mem2(check, &cert, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		snprintf(err, len, "%s, %s: %s", cert_path, key_path, gnutls_strerror(r));
		goto out;
	}
	p->ncerts = TLS_MAX_CHAIN;
	if ((r = gnutls_pcert_list_import_x509_raw(p->certs, &p->ncerts, &cert, GNUTLS_X509_FMT_PEM, 0)) < 0) {
		p->ncerts = 0;
		snprintf(err, len, "%s: %s", cert_path, gnutls_strerror(r));
		goto out;
	}
	if ((r = gnutls_privkey_init(&p->key)) < 0 ||
	    (r = gnutls_privkey_import_x509_raw(p->key, &key, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
		snprintf(err, len, "%s: %s", key_path, gnutls_strerror(r));
		goto out;
	}
	e = 0;
out:
	if (check)
		gnutls_certificate_free_credentials(check);
	if (key.data) {
		gnutls_memset(key.data, 0, key.size);
		gnutls_free(key.data);
	}
	gnutls_free(cert.data);
	if (e)
		pair_free(p);
	else
		*out = p;
	return e;
}

/* Reads the client CAs of path into t, checking they are PEM certificates. Returns 0 or -errno. */
static int load_client_ca(struct tls *t, const char *path, char *err, size_t len)
{
	gnutls_x509_crt_t crts[TLS_MAX_CHAIN];
	unsigned n = TLS_MAX_CHAIN;
	int r, e = read_file(path, false, &t->client_ca, err, len);

	if (e)
		return e;
	r = gnutls_x509_crt_list_import(crts, &n, &t->client_ca, GNUTLS_X509_FMT_PEM, 0);
	if (r < 0) {
		snprintf(err, len, "%s: %s", path, gnutls_strerror(r));
		return -EINVAL;
	}
	for (unsigned i = 0; i < n; i++)
		gnutls_x509_crt_deinit(crts[i]);
	return 0;
}

int tls_new(const char *cert_path, const char *key_path, const char *client_ca_path, struct tls **out, char *err,
	    size_t len)
{
	struct tls *t = calloc(1, sizeof(*t));
	int e;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	if (!(t->cert_path = strdup(cert_path)) || !(t->key_path = strdup(key_path))) {
		tls_free(t);
		return -ENOMEM;
	}
	if ((e = pair_load(cert_path, key_path, &t->current, err, len)) ||
	    (client_ca_path && (e = load_client_ca(t, client_ca_path, err, len)))) {
		tls_free(t);
		return e;
	}
	pthread_mutex_lock(&serving_lock);
	serving = t;
	pthread_mutex_unlock(&serving_lock);
	*out = t;
	return 0;
}

int tls_reload(struct tls *t, char *err, size_t len)
{
	struct pair *p;
	int e = pair_load(t->cert_path, t->key_path, &p, err, len);

	if (e)
		return e;
	pthread_mutex_lock(&t->lock);
	if (t->nretired == RETIRED_MAX) {
		pair_free(t->retired[0]);
		memmove(t->retired, t->retired + 1, (RETIRED_MAX - 1) * sizeof(*t->retired));
		t->nretired--;
	}
	t->retired[t->nretired++] = t->current;
	t->current = p;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

const char *tls_client_ca(const struct tls *t)
{
	return (const char *)t->client_ca.data;
}

/* gnutls_certificate_retrieve_function2: the pair loaded last, whatever the client asked for. With
 * client CAs, the client's certificate is made required and checked in this handshake (libmicrohttpd
 * only asks for one, and leaves it unchecked): the callback runs before the certificate request is
 * sent. */
static int retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
		    const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length, gnutls_pcert_st **pcert,
		    unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	int r = -1;

	(void)req_ca_rdn, (void)nreqs, (void)pk_algos, (void)pk_algos_length;
	pthread_mutex_lock(&serving_lock);
	if (serving) {
		pthread_mutex_lock(&serving->lock);
		*pcert = serving->current->certs;
		*pcert_length = serving->current->ncerts;
		*pkey = serving->current->key;
		pthread_mutex_unlock(&serving->lock);
		r = 0;
		if (serving->client_ca.data) {
			gnutls_certificate_server_set_request(session, GNUTLS_CERT_REQUIRE);
			gnutls_session_set_verify_cert(session, NULL, 0);
		}
	}
	pthread_mutex_unlock(&serving_lock);
	return r;
}

gnutls_certificate_retrieve_function2 *tls_retrieve_function(void)
{
	return retrieve;
}

void tls_free(struct tls *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&serving_lock);
	if (serving == t)
		serving = NULL;
	pthread_mutex_unlock(&serving_lock);
	pair_free(t->current);
	for (unsigned i = 0; i < t->nretired; i++)
		pair_free(t->retired[i]);
	pthread_mutex_destroy(&t->lock);
	gnutls_free(t->client_ca.data);
	free(t->cert_path);
	free(t->key_path);
	free(t);
}
