/* Placeholder header: the TLS helpers of the test server land here. */
#ifndef CPOCKETTESTTLS_H
#define CPOCKETTESTTLS_H
int pktt_placeholder(void);
#endif
