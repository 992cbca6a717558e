/* The OpenSSL functions pk_tls.c calls, reached through pointers.
 *
 * libssl and libcrypto are not linked: together they cost about 2 MB of RSS
 * at process load, which a client that never speaks https should not pay.
 * pk_tls.c opens them with dlopen on first use and fills `pk__ssl` with
 * dlsym. Include after the OpenSSL headers (the prototypes are theirs, taken
 * with __typeof__, so a pointer can never disagree with the header), and
 * only from pk_tls.c.
 *
 * The list holds real functions, including those that header macros expand
 * to (SSL_CTX_set_mode -> SSL_CTX_ctrl, BIO_set_retry_read -> BIO_set_flags,
 * OPENSSL_free -> CRYPTO_free, SSL_get_app_data -> SSL_get_ex_data...). A
 * function missing here fails at link time, not at run time: to check,
 * `nm -u` on pk_tls.o must show no OpenSSL name. */
#ifndef PK_SSL_SYMS_H
#define PK_SSL_SYMS_H

#define PK_SSL_FUNCS(X)                         \
  /* libssl */                                  \
  X(TLS_client_method)                          \
  X(SSL_CTX_new)                                \
  X(SSL_CTX_free)                               \
  X(SSL_CTX_ctrl)                               \
  X(SSL_CTX_set_cipher_list)                    \
  X(SSL_CTX_set_verify)                         \
  X(SSL_CTX_load_verify_locations)              \
  X(SSL_CTX_set_default_verify_paths)           \
  X(SSL_CTX_use_certificate_chain_file)         \
  X(SSL_CTX_use_PrivateKey_file)                \
  X(SSL_CTX_check_private_key)                  \
  X(SSL_CTX_sess_set_new_cb)                    \
  X(SSL_new)                                    \
  X(SSL_free)                                   \
  X(SSL_ctrl)                                   \
  X(SSL_set_bio)                                \
  X(SSL_set_connect_state)                      \
  X(SSL_set_ex_data)                            \
  X(SSL_get_ex_data)                            \
  X(SSL_get0_param)                             \
  X(SSL_set_alpn_protos)                        \
  X(SSL_get0_alpn_selected)                     \
  X(SSL_set_session)                            \
  X(SSL_session_reused)                         \
  X(SSL_SESSION_free)                           \
  X(SSL_SESSION_is_resumable)                   \
  X(SSL_do_handshake)                           \
  X(SSL_get_error)                              \
  X(SSL_get_verify_result)                      \
  X(SSL_get1_peer_certificate)                  \
  X(SSL_read)                                   \
  X(SSL_write)                                  \
  X(SSL_has_pending)                            \
  X(SSL_is_init_finished)                       \
  X(SSL_shutdown)                               \
  X(SSL_set_shutdown)                           \
  /* libcrypto */                               \
  X(BIO_new)                                    \
  X(BIO_free)                                   \
  X(BIO_get_data)                               \
  X(BIO_set_data)                               \
  X(BIO_set_init)                               \
  X(BIO_set_flags)                              \
  X(BIO_clear_flags)                            \
  X(BIO_get_new_index)                          \
  X(BIO_meth_new)                               \
  X(BIO_meth_free)                              \
  X(BIO_meth_set_write)                         \
  X(BIO_meth_set_read)                          \
  X(BIO_meth_set_ctrl)                          \
  X(BIO_meth_set_create)                        \
  X(ERR_clear_error)                            \
  X(ERR_peek_error)                             \
  X(X509_VERIFY_PARAM_set_hostflags)            \
  X(X509_VERIFY_PARAM_set1_host)                \
  X(X509_VERIFY_PARAM_set1_ip_asc)              \
  X(X509_free)                                  \
  X(X509_get0_pubkey)                           \
  X(X509_verify_cert_error_string)              \
  X(i2d_PUBKEY)                                 \
  X(EVP_Digest)                                 \
  X(EVP_sha256)                                 \
  X(CRYPTO_free)

/* Members are prefixed so that the #defines below never rewrite them, and
 * the loader can name a member (p_##name) and a symbol (#name) after them. */
#define PK_SSL_MEMBER(name) __typeof__(name) *p_##name;
struct pk__ssl_funcs {
  PK_SSL_FUNCS(PK_SSL_MEMBER)
};
#undef PK_SSL_MEMBER

/* From here on every call of an OpenSSL function, written or produced by a
 * header macro, goes through the table (pk_tls.c's static `pk__ssl`). */
#define TLS_client_method pk__ssl.p_TLS_client_method
#define SSL_CTX_new pk__ssl.p_SSL_CTX_new
#define SSL_CTX_free pk__ssl.p_SSL_CTX_free
#define SSL_CTX_ctrl pk__ssl.p_SSL_CTX_ctrl
#define SSL_CTX_set_cipher_list pk__ssl.p_SSL_CTX_set_cipher_list
#define SSL_CTX_set_verify pk__ssl.p_SSL_CTX_set_verify
#define SSL_CTX_load_verify_locations pk__ssl.p_SSL_CTX_load_verify_locations
#define SSL_CTX_set_default_verify_paths pk__ssl.p_SSL_CTX_set_default_verify_paths
#define SSL_CTX_use_certificate_chain_file pk__ssl.p_SSL_CTX_use_certificate_chain_file
#define SSL_CTX_use_PrivateKey_file pk__ssl.p_SSL_CTX_use_PrivateKey_file
#define SSL_CTX_check_private_key pk__ssl.p_SSL_CTX_check_private_key
#define SSL_CTX_sess_set_new_cb pk__ssl.p_SSL_CTX_sess_set_new_cb
#define SSL_new pk__ssl.p_SSL_new
#define SSL_free pk__ssl.p_SSL_free
#define SSL_ctrl pk__ssl.p_SSL_ctrl
#define SSL_set_bio pk__ssl.p_SSL_set_bio
#define SSL_set_connect_state pk__ssl.p_SSL_set_connect_state
#define SSL_set_ex_data pk__ssl.p_SSL_set_ex_data
#define SSL_get_ex_data pk__ssl.p_SSL_get_ex_data
#define SSL_get0_param pk__ssl.p_SSL_get0_param
#define SSL_set_alpn_protos pk__ssl.p_SSL_set_alpn_protos
#define SSL_get0_alpn_selected pk__ssl.p_SSL_get0_alpn_selected
#define SSL_set_session pk__ssl.p_SSL_set_session
#define SSL_session_reused pk__ssl.p_SSL_session_reused
#define SSL_SESSION_free pk__ssl.p_SSL_SESSION_free
#define SSL_SESSION_is_resumable pk__ssl.p_SSL_SESSION_is_resumable
#define SSL_do_handshake pk__ssl.p_SSL_do_handshake
#define SSL_get_error pk__ssl.p_SSL_get_error
#define SSL_get_verify_result pk__ssl.p_SSL_get_verify_result
#define SSL_get1_peer_certificate pk__ssl.p_SSL_get1_peer_certificate
#define SSL_read pk__ssl.p_SSL_read
#define SSL_write pk__ssl.p_SSL_write
#define SSL_has_pending pk__ssl.p_SSL_has_pending
#define SSL_is_init_finished pk__ssl.p_SSL_is_init_finished
#define SSL_shutdown pk__ssl.p_SSL_shutdown
#define SSL_set_shutdown pk__ssl.p_SSL_set_shutdown
#define BIO_new pk__ssl.p_BIO_new
#define BIO_free pk__ssl.p_BIO_free
#define BIO_get_data pk__ssl.p_BIO_get_data
#define BIO_set_data pk__ssl.p_BIO_set_data
#define BIO_set_init pk__ssl.p_BIO_set_init
#define BIO_set_flags pk__ssl.p_BIO_set_flags
#define BIO_clear_flags pk__ssl.p_BIO_clear_flags
#define BIO_get_new_index pk__ssl.p_BIO_get_new_index
#define BIO_meth_new pk__ssl.p_BIO_meth_new
#define BIO_meth_free pk__ssl.p_BIO_meth_free
#define BIO_meth_set_write pk__ssl.p_BIO_meth_set_write
#define BIO_meth_set_read pk__ssl.p_BIO_meth_set_read
#define BIO_meth_set_ctrl pk__ssl.p_BIO_meth_set_ctrl
#define BIO_meth_set_create pk__ssl.p_BIO_meth_set_create
#define ERR_clear_error pk__ssl.p_ERR_clear_error
#define ERR_peek_error pk__ssl.p_ERR_peek_error
#define X509_VERIFY_PARAM_set_hostflags pk__ssl.p_X509_VERIFY_PARAM_set_hostflags
#define X509_VERIFY_PARAM_set1_host pk__ssl.p_X509_VERIFY_PARAM_set1_host
#define X509_VERIFY_PARAM_set1_ip_asc pk__ssl.p_X509_VERIFY_PARAM_set1_ip_asc
#define X509_free pk__ssl.p_X509_free
#define X509_get0_pubkey pk__ssl.p_X509_get0_pubkey
#define X509_verify_cert_error_string pk__ssl.p_X509_verify_cert_error_string
#define i2d_PUBKEY pk__ssl.p_i2d_PUBKEY
#define EVP_Digest pk__ssl.p_EVP_Digest
#define EVP_sha256 pk__ssl.p_EVP_sha256
#define CRYPTO_free pk__ssl.p_CRYPTO_free

#endif
