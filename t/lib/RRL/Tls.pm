package RRL::Tls;

# Certificates for the TLS tests, made with the openssl command inside an
# RRL::Test's directory (tls/, world-readable: nginx workers run as
# nobody), and the arguments that make redis-server and redis-cli speak
# TLS with them.
#
#   my $ca = RRL::Tls::ca($t, 'ca');                  # {cert, key}
#   my $srv = RRL::Tls::cert($t, $ca, 'server',
#       san => 'DNS:localhost,IP:127.0.0.1');          # {cert, key, ca}
#   my $cli = RRL::Tls::cert($t, $ca, 'client', client => 1);
#   RRL::Tls::server_args($srv, $port, auth_clients => 'no');
#   RRL::Tls::cli_args($srv);                          # --tls --cacert ...
#   RRL::Tls::status($response);                       # "200 PASSED"
#   RRL::Tls::handshake_errors($nginx);                # the metric's count
#
# The world of the TLS tests (t/tls.t, t/tls_cluster.t, t/tls_sentinel.t):
#
#   my ($ca, $other_ca, $srv) = RRL::Tls::certs($t);
#   my ($ca, $other_ca, $srv) = RRL::Tls::setup($t);   # skip_all without TLS
#   RRL::Tls::nginx_conf('tc', "127.0.0.1:$port cluster tls tls_ca=...");

use strict;
use warnings;

use Carp qw(croak);
use Test::More ();

use RRL::Test;

sub dir {
    my ($t) = @_;
    my $d = $t->testdir . '/tls';
    unless (-d $d) {
        mkdir $d or croak "mkdir $d: $!";
        chmod 0755, $d;
    }
    return $d;
}

sub openssl {
    my (@args) = @_;
    my $out = RRL::Test::run_command('openssl', @args);
    croak "openssl @args: $out" if $?;
    return $out;
}

sub readable { chmod 0644, grep { -e } @_ }

# a self-signed CA (EC P-256: quick to make and to use)
sub ca {
    my ($t, $name) = @_;
    my $d = dir($t);
    my %c = (cert => "$d/$name.crt", key => "$d/$name.key");
    openssl('req', '-x509', '-new', '-nodes', '-newkey', 'ec',
        '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-sha256', '-days', 2,
        '-subj', "/CN=rrl test $name", '-keyout', $c{key}, '-out', $c{cert});
    readable(@c{qw(cert key)});
    return \%c;
}

# cert($t, $ca, $name, san => 'DNS:a,IP:b', client => 1): a certificate
# signed by $ca, for a server (subjectAltName san) or a client
sub cert {
    my ($t, $ca, $name, %o) = @_;
    my $d = dir($t);
    my %c = (cert => "$d/$name.crt", key => "$d/$name.key", ca => $ca->{cert});
    my $ext = $t->write_file("tls/$name.ext", join "\n",
        'basicConstraints=CA:FALSE',
        'keyUsage=digitalSignature,keyEncipherment',
        ($o{client} ? 'extendedKeyUsage=clientAuth'
                    # a Redis node uses its certificate for its own
                    # connections too (cluster bus, replication)
                    : ('extendedKeyUsage=serverAuth,clientAuth',
                       'subjectAltName=' . ($o{san} // 'DNS:localhost'))),
        '');
    openssl('req', '-new', '-nodes', '-newkey', 'ec',
        '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-subj', "/CN=rrl $name",
        '-keyout', $c{key}, '-out', "$d/$name.csr");
    openssl('x509', '-req', '-in', "$d/$name.csr", '-CA', $ca->{cert},
        '-CAkey', $ca->{key}, '-CAcreateserial', '-sha256', '-days', 2,
        '-extfile', $ext, '-out', $c{cert});
    readable(@c{qw(cert key)});
    return \%c;
}

# certs($t): a CA, another CA (for a wrong-CA case) and a server
# certificate for localhost and 127.0.0.1 signed by the first
sub certs {
    my ($t) = @_;
    my $ca = ca($t, 'ca');
    my $other_ca = ca($t, 'other-ca');
    my $srv = cert($t, $ca, 'server', san => 'DNS:localhost,IP:127.0.0.1');
    return ($ca, $other_ca, $srv);
}

# setup($t): certs($t), the test file skipped first when the module has no
# TLS (hiredis 0.14; t/tls.t checks that such a module refuses "tls")
sub setup {
    my ($t) = @_;
    Test::More::plan(skip_all => 'the module is built without TLS (hiredis 0.14); '
        . 't/tls.t checks that it refuses "tls"')
        if RRL::Test::hiredis_major() < 1;
    return certs($t);
}

# nginx_conf($zone, $server): the config of t/tls_cluster.t and
# t/tls_sentinel.t: redis_ratelimit_server $server (timeouts of 1 s), a
# zone of 3r/h on $arg_key limiting / (fail open) and /closed/ (fail
# closed), the status in X-RL-Status, /metrics
sub nginx_conf {
    my ($zone, $server) = @_;
    return <<"EOF";
http {
    redis_ratelimit_server $server timeout=1s connect_timeout=1s;
    redis_ratelimit_zone \$arg_key zone=$zone rate=3r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=$zone;
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=$zone;
            redis_ratelimit_fail closed;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF
}

# redis-server's TLS arguments: TLS on $port with $srv's certificate,
# clients checked against its CA when auth_clients is yes (no by default)
sub server_args {
    my ($srv, $port, %o) = @_;
    return ('--tls-port', $port,
        '--tls-cert-file', $srv->{cert}, '--tls-key-file', $srv->{key},
        '--tls-ca-cert-file', $srv->{ca},
        '--tls-auth-clients', $o{auth_clients} // 'no');
}

# redis-cli's: TLS, the server checked against $srv's CA, with $srv's
# certificate as the client's (for servers that require one)
sub cli_args {
    my ($srv) = @_;
    return ('--tls', '--cacert', $srv->{ca}, '--cert', $srv->{cert},
        '--key', $srv->{key});
}

# "STATUS $redis_ratelimit_status" of a response (X-RL-Status)
sub status {
    my ($r) = @_;
    return ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none');
}

# redis_ratelimit_redis_errors_total{kind="tls_handshake"} of the nginx
# instance's /metrics
sub handshake_errors {
    my ($inst) = @_;
    my ($v) = $inst->get('/metrics')->{body}
        =~ /^redis_ratelimit_redis_errors_total\{kind="tls_handshake"\} (\d+)$/m;
    return $v;
}

1;
