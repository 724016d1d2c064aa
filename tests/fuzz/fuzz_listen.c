/* fuzz_listen.c - libFuzzer target: listen addresses "ADDR:PORT" / "[ADDR6]:PORT" (http_parse_listen). */
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	struct sockaddr_storage ss;
	unsigned len = 0;

	if (http_parse_listen(s, &ss, &len) == 0)
		FUZZ_ASSERT((ss.ss_family == AF_INET && len == sizeof(struct sockaddr_in)) ||
			    (ss.ss_family == AF_INET6 && len == sizeof(struct sockaddr_in6)));
	free(s);
	return 0;
}
