// rrl::Tls: the SSL context of a configuration and a connection's SSL
// object, with certificates made by the openssl command for each test run.
#include "conf/tls.hpp"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "api/rrl_conf.h"
#include "api/rrl_tls.h"

namespace {

class TlsTest : public ::testing::Test {
   protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/rrl-tls-XXXXXX";
        dir_ = mkdtemp(tmpl);
        std::string d = dir_;
        std::string cmd =
            "cd " + d +
            " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "
            "/CN=ca -keyout ca.key -out ca.pem"
            " && openssl req -newkey rsa:2048 -nodes -subj /CN=client "
            "-keyout client.key -out client.csr"
            " && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
            "-CAcreateserial -days 1 -out client.pem"
            " && openssl req -newkey rsa:2048 -nodes -subj /CN=other "
            "-keyout other.key -out other.csr"
            " && echo garbage > bad.pem && touch unreadable.pem"
            " && chmod 000 unreadable.pem) > /dev/null 2>&1";
        cmd = "(" + cmd;
        ASSERT_EQ(std::system(cmd.c_str()), 0);
    }
    static void TearDownTestSuite() { std::system(("rm -rf " + dir_).c_str()); }
    static std::string file(const char* name) { return dir_ + "/" + name; }
    static std::string error_of(const rrl::TlsFiles& files) {
        try {
            rrl::Tls tls(files);
        } catch (const std::runtime_error& e) {
            return e.what();
        }
        return "";
    }
    static std::string dir_;
};

std::string TlsTest::dir_;

rrl::TlsFiles files(std::string ca, std::string cert = "",
                    std::string key = "") {
    rrl::TlsFiles f;
    f.ca = ca;
    f.cert = cert;
    f.key = key;
    return f;
}

TEST_F(TlsTest, AContextWithTheSystemsCas) {
    rrl::Tls tls({});
    EXPECT_TRUE(tls.verify());
    SSL* ssl = tls.connection("redis.example.com");
    ASSERT_NE(ssl, nullptr);
    EXPECT_STREQ(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name),
                 "redis.example.com");
    EXPECT_EQ(SSL_get_verify_mode(ssl), SSL_VERIFY_PEER);
    SSL_free(ssl);
}

TEST_F(TlsTest, ACaAndAClientCertificate) {
    rrl::Tls tls(files(file("ca.pem"), file("client.pem"), file("client.key")));
    SSL* ssl = tls.connection("10.0.0.1");
    ASSERT_NE(ssl, nullptr);
    // an address is checked, never sent as SNI
    EXPECT_EQ(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name), nullptr);
    EXPECT_NE(SSL_get_certificate(ssl), nullptr);
    SSL_free(ssl);
}

TEST_F(TlsTest, VerifyOff) {
    rrl::TlsFiles off;
    off.verify = false;
    rrl::Tls tls(off);
    EXPECT_FALSE(tls.verify());
    SSL* ssl = tls.connection("");
    ASSERT_NE(ssl, nullptr);
    EXPECT_EQ(SSL_get_verify_mode(ssl), SSL_VERIFY_NONE);
    EXPECT_EQ(rrl::Tls::why(ssl), "");
    SSL_free(ssl);
}

TEST_F(TlsTest, FilesThatCannotBeUsedAreNamed) {
    EXPECT_EQ(error_of(files(file("missing.pem"))),
              "cannot read tls_ca=\"" + file("missing.pem") +
                  "\": No such file or directory");
    if (getuid() != 0) {  // root reads any file
        EXPECT_EQ(error_of(files(file("unreadable.pem"))),
                  "cannot read tls_ca=\"" + file("unreadable.pem") +
                      "\": Permission denied");
    }
    EXPECT_EQ(error_of(files(file("bad.pem")))
                  .rfind("cannot load tls_ca=\"" + file("bad.pem") + "\": ", 0),
              0u);
    EXPECT_EQ(error_of(files("", file("bad.pem"), file("client.key")))
                  .rfind("cannot load tls_cert=\"" + file("bad.pem"), 0),
              0u);
    EXPECT_EQ(error_of(files("", file("client.pem"), file("missing.key"))),
              "cannot read tls_key=\"" + file("missing.key") +
                  "\": No such file or directory");
    // a key that is not the certificate's
    EXPECT_EQ(error_of(files("", file("client.pem"), file("other.key")))
                  .rfind("cannot use tls_key=\"" + file("other.key"), 0),
              0u);
}

rrl_conf_str_t str(const std::string& s) {
    return {s.data(), s.size()};
}

// a server's files, a relative name under nginx's conf prefix
TEST_F(TlsTest, TheServersFilesUnderThePrefix) {
    std::string prefix = dir_ + "/", ca = "ca.pem", key = "client.key";
    std::string cert = file("client.pem"), missing = "missing.pem";
    rrl_server_conf_t sc{};
    char why[256] = "untouched";

    sc.tls_verify = 1;
    rrl_tls_t* tls =
        rrl_server_tls(&sc, prefix.data(), prefix.size(), why, sizeof(why));
    ASSERT_NE(tls, nullptr) << why;  // no file: the system's CAs
    rrl_tls_free(tls);

    sc.tls_ca = str(ca);
    sc.tls_cert = str(cert);  // absolute: as written
    sc.tls_key = str(key);
    tls = rrl_server_tls(&sc, prefix.data(), prefix.size(), why, sizeof(why));
    ASSERT_NE(tls, nullptr) << why;
    EXPECT_STREQ(why, "untouched");
    rrl_tls_free(tls);

    sc.tls_ca = str(missing);
    EXPECT_EQ(
        rrl_server_tls(&sc, prefix.data(), prefix.size(), why, sizeof(why)),
        nullptr);
    EXPECT_EQ(std::string(why), "cannot read tls_ca=\"" + file("missing.pem") +
                                    "\": No such file or directory");

    sc.tls_ca = str(ca);
    sc.tls_key = str(missing);
    EXPECT_EQ(
        rrl_server_tls(&sc, prefix.data(), prefix.size(), why, sizeof(why)),
        nullptr);
    EXPECT_EQ(std::string(why), "cannot read tls_key=\"" + file("missing.pem") +
                                    "\": No such file or directory");
}

}  // namespace

namespace {

// through the shim's entry, rrl_server_tls(): no file, the system's CAs
TEST(TlsCApi, MadeAndFreed) {
    rrl_server_conf_t sc{};
    sc.tls_verify = 1;
    char why[64] = "untouched";
    rrl_tls_t* tls = rrl_server_tls(&sc, "/", 1, why, sizeof(why));
    ASSERT_NE(tls, nullptr);
    EXPECT_STREQ(why, "untouched");
    rrl_tls_free(tls);
}

TEST(TlsCApi, WhyIsCutToItsRoom) {
    const std::string ca = "/nonexistent/ca.pem";
    rrl_server_conf_t sc{};
    sc.tls_ca = {ca.data(), ca.size()};
    char why[16];
    EXPECT_EQ(rrl_server_tls(&sc, "/", 1, why, sizeof(why)), nullptr);
    EXPECT_STREQ(why, "cannot read tls");
}

}  // namespace
