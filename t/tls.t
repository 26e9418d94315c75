#!/usr/bin/perl

# TLS to a single Redis (redis-server --tls-port, certificates made here
# with openssl: a CA, a server certificate for localhost and 127.0.0.1,
# one for redis.example.test only, a client certificate, another CA):
# - a good certificate (tls_ca): limits exact (3 PASSED, then REJECTED),
#   the module's connection on the TLS port, no tls_handshake error;
# - a wrong CA: fail open FAILED_OPEN, fail closed 429; error.log names
#   the handshake failure, at most once a second, while
#   redis_ratelimit_redis_errors_total{kind="tls_handshake"} counts every
#   attempt;
# - Redis restarted under load: every request answered 200, FAILED_OPEN
#   while it is down, PASSED again after, the same workers;
# - a wrong name: "hostname mismatch" (localhost), "IP address mismatch"
#   (127.0.0.1); with tls_verify=off it passes; tls_server_name= naming the
#   certificate's name, with an IP address, passes;
# - client certificates (tls-auth-clients yes): without tls_cert/tls_key
#   it fails, with them it passes;
# - a server that never answers the handshake: it times out at
#   connect_timeout, the fail mode meanwhile;
# - nginx -t refuses, naming directive, value and FILE:LINE: a missing
#   tls_ca file, one that holds no certificate, tls_cert without tls_key,
#   tls_* without tls, a bad tls_verify.
# With a module built without TLS (hiredis 0.14), only that nginx -t
# refuses "tls", saying it needs hiredis >= 1.0 with TLS.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use File::Spec;
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Load;
use RRL::Tls;

my $t = RRL::Test->new;

my $conf = <<'EOF';
http {
    redis_ratelimit_server %%SERVER%% timeout=1s connect_timeout=1s; # HERE
    redis_ratelimit_zone $arg_key zone=tl rate=3r/h;
    redis_ratelimit_zone $arg_key zone=big rate=1000000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=tl;
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=tl;
            redis_ratelimit_fail closed;
        }
        location /big/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=big;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF

sub with_server {
    my ($server) = @_;
    (my $c = $conf) =~ s/%%SERVER%%/$server/;
    return $c;
}

# nginx -t refuses: the message, with FILE:LINE of the server directive
sub refused {
    my ($name, $server, $want) = @_;
    my ($out, $rc, $file, $line) = $t->nginx_t_here(with_server($server));
    isnt($rc, 0, "$name: nginx -t fails");
    like($out, qr/^nginx: \[emerg\] \Q$want\E in \Q$file:$line\E$/m,
        "$name: message") or diag("expected: $want in $file:$line");
}

if (RRL::Test::hiredis_major() < 1) {
    refused('tls without a TLS build', '127.0.0.1:6379 tls',
        '"tls" in "redis_ratelimit_server" directive needs a module built '
        . 'with hiredis >= 1.0 with TLS (hiredis_ssl); this one was built '
        . 'without it');
    SKIP: {
        skip 'the module is built with hiredis 0.14, without TLS: only its '
            . 'refusal is tested (scripts/test.sh with RRL_HIREDIS1=1 runs '
            . 'the rest)', 1;
    }
    $t->done_testing;
    exit;
}

my $dir = $t->testdir;
my ($ca, $other_ca, $srv) = RRL::Tls::certs($t);
my $named = RRL::Tls::cert($t, $ca, 'named', san => 'DNS:redis.example.test');
my $client = RRL::Tls::cert($t, $ca, 'client', client => 1);

# the plain port for redis-cli, TLS on its own port (localhost may be ::1)
my $tp = RRL::Test::free_port();
$t->start_redis(args => ['--bind', '127.0.0.1', '-::1',
    RRL::Tls::server_args($srv, $tp)]);

sub metrics { ($_[0]->metrics)[0] }

my $TLS_ERRORS = 'redis_ratelimit_redis_errors_total{kind="tls_handshake"}';

sub tls_errors { metrics($_[0])->{$TLS_ERRORS} }

# three requests pass, the fourth is rejected
sub exact {
    my ($inst, $key, $name) = @_;
    my @s = map { RRL::Tls::status($inst->get("/?key=$key")) } 1 .. 4;
    is("@s", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
        "$name: limits exact");
}

# the handshake failed: logged, the fail mode in both locations
sub fails {
    my ($inst, $re, $name) = @_;
    ok($inst->wait_log(qr/\[error\] .*redis_ratelimit: TLS handshake with \S+:$tp failed: $re/, 1, 5),
        "$name: the handshake failure logged")
        or diag(join "\n", $inst->grep_log(qr/redis_ratelimit/));
    is(RRL::Tls::status($inst->get("/?key=f")), '200 FAILED_OPEN', "$name: fail open");
    is(RRL::Tls::status($inst->get("/closed/?key=f")), '429 FAILED_CLOSED',
        "$name: fail closed");
}

my $tls = "tls tls_ca=$ca->{cert}";

# a good certificate

my $n = $t->start_nginx(with_server("127.0.0.1:$tp $tls"));
ok($n->wait_log(qr/\[info\] .*redis_ratelimit: connected to 127\.0\.0\.1:$tp with TLS/),
    'good certificate: connected with TLS');
exact($n, 'good', 'good certificate');
ok(grep({ /rrl:\{tl:good\}/ } $t->redis('KEYS', 'rrl:*')),
    'good certificate: the key in Redis');
my @clients = grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST');
ok(@clients == 1 && $clients[0] =~ /laddr=127\.0\.0\.1:$tp /,
    'good certificate: the module connected to the TLS port')
    or diag(join "\n", @clients);
is(tls_errors($n), 0, 'good certificate: no tls_handshake error');

# a wrong CA: every attempt (backoff: 50 .. 500 ms) counted, logged at
# most once a second

my $n2 = $t->start_nginx(with_server("127.0.0.1:$tp tls tls_ca=$other_ca->{cert}"),
    wait_connected => 0);
fails($n2, qr/certificate verify failed: (?:unable to get local issuer certificate|self-signed certificate in certificate chain)/,
    'wrong CA');
my $e0 = tls_errors($n2);
my $start = time;
sleep 2.5;
my $e1 = tls_errors($n2);
my $logged = () = $n2->grep_log(qr/TLS handshake with/);
cmp_ok($e0, '>=', 1, "wrong CA: tls_handshake errors counted ($e0)");
cmp_ok($e1, '>', $e0 + 2, "wrong CA: and counting up ($e0 -> $e1 in 2.5 s)");
ok($logged >= 1 && $logged <= 4,
    "wrong CA: logged at most once a second ($logged times, $e1 failures)");
ok(!$n2->grep_log(qr/connected to/), 'wrong CA: never connected');
$n2->stop;

# Redis restarted under load, with TLS

my @uris = map { "/big/?key=l$_" } 1 .. 4;
my @workers = $n->worker_pids;
my $connected = () = $n->grep_log(qr/connected to \S+ with TLS/);
my $load = RRL::Load->start($t, $n->port, \@uris, interval => 0.02);
$load->wait_rounds(10);
$t->stop_redis;
my $down = time;
sleep 0.5;
$t->start_redis;
my $up = time;
ok($n->wait_log(qr/connected to \S+ with TLS/, $connected + 1, 5),
    'restart: connected again with TLS');
RRL::Load::wait_status($n, ['/big/?key=after'], 'PASSED', 5);
my $rounds = $load->rounds_done;
$load->wait_rounds($rounds + 10);
my @rec = $load->stop;

my %seen;
$seen{"$_->{status} $_->{rl}"}++ for @rec;
is(join(', ', grep { !/^200 (?:PASSED|FAILED_OPEN)$/ } sort keys %seen), '',
    'restart: every request answered 200 PASSED or 200 FAILED_OPEN ('
    . RRL::Load::tally(map { "$_->{status} $_->{rl}" } @rec) . ')');
ok(grep({ $_->{rl} eq 'FAILED_OPEN' && $_->{end} > $down } @rec),
    'restart: FAILED_OPEN while Redis was down');
my ($last_fail) = reverse grep { $_->{rl} ne 'PASSED' } @rec;
my $resumed = $last_fail ? $last_fail->{end} - $up : 0;
ok($resumed < 3, sprintf('restart: PASSED for good %.2f s after Redis was '
    . 'back', $resumed));
is($rec[-1]{rl}, 'PASSED', 'restart: PASSED at the end');
my @slow = grep { $_->{end} - $_->{start} > 1.5 } @rec;
is(scalar @slow, 0, 'restart: no request slower than 1.5 s');
is_deeply([$n->worker_pids], \@workers, "restart: the same workers (@workers)");
$n->stop;

# a wrong name: the certificate names redis.example.test only

my $r = $t->redis('CONFIG', 'SET', 'tls-cert-file', $named->{cert},
    'tls-key-file', $named->{key});
is($r, 'OK', 'Redis now shows a certificate for redis.example.test');

my $n3 = $t->start_nginx(with_server("localhost:$tp $tls"), wait_connected => 0);
fails($n3, qr/certificate verify failed: hostname mismatch/, 'wrong name');
$n3->stop;

my $n4 = $t->start_nginx(with_server("127.0.0.1:$tp $tls"), wait_connected => 0);
fails($n4, qr/certificate verify failed: IP address mismatch/, 'wrong IP');
$n4->stop;

my $n5 = $t->start_nginx(with_server("localhost:$tp $tls tls_verify=off"));
exact($n5, 'noverify', 'wrong name, tls_verify=off');
is(tls_errors($n5), 0, 'wrong name, tls_verify=off: no tls_handshake error');
$n5->stop;

my $n6 = $t->start_nginx(with_server(
    "127.0.0.1:$tp $tls tls_server_name=redis.example.test"));
ok($n6->grep_log(qr/connected to 127\.0\.0\.1:$tp with TLS/),
    'tls_server_name: connected with TLS');
exact($n6, 'sni', 'tls_server_name');
$n6->stop;

# client certificates

$r = $t->redis('CONFIG', 'SET', 'tls-cert-file', $srv->{cert},
    'tls-key-file', $srv->{key}, 'tls-auth-clients', 'yes');
is($r, 'OK', 'Redis now requires client certificates');

my $n7 = $t->start_nginx(with_server("127.0.0.1:$tp $tls"), wait_connected => 0);
fails($n7, qr/.+/, 'no client certificate');
ok(!$n7->grep_log(qr/connected to/), 'no client certificate: never connected');
cmp_ok(tls_errors($n7), '>=', 1, 'no client certificate: counted as tls_handshake');
$n7->stop;

my $n8 = $t->start_nginx(with_server("127.0.0.1:$tp $tls "
    . "tls_cert=$client->{cert} tls_key=$client->{key}"));
exact($n8, 'client', 'client certificate');
is(tls_errors($n8), 0, 'client certificate: no tls_handshake error');
$n8->stop;

# a server that takes the connection but never answers the handshake: it
# fails at connect_timeout, as timed out

my $mute = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
    Proto => 'tcp', Listen => 16, ReuseAddr => 1) or die "listen: $!";
my $mp = $mute->sockport;
$start = time;
my $n9 = $t->start_nginx(with_server("127.0.0.1:$mp $tls"), wait_connected => 0);
my $m = $n9->get('/?key=m');
is(RRL::Tls::status($m), '200 FAILED_OPEN', 'mute server: fail open');
ok($m->{time} < 1.5, sprintf('mute server: answered in %.2f s', $m->{time}));
ok($n9->wait_log(qr/\[error\] .*TLS handshake with 127\.0\.0\.1:$mp failed: timed out/, 1, 3),
    'mute server: the handshake timed out')
    or diag(join "\n", $n9->grep_log(qr/redis_ratelimit/));
my $waited = time - $start;
ok($waited > 0.9 && $waited < 2.5,
    sprintf('mute server: at connect_timeout (1 s; %.2f s)', $waited));
cmp_ok(tls_errors($n9), '>=', 1, 'mute server: counted as tls_handshake');
$n9->stop;
close $mute;

# nginx -t

refused('missing tls_ca', "127.0.0.1:$tp tls tls_ca=$dir/tls/missing.crt",
    qq{cannot read tls_ca="$dir/tls/missing.crt": No such file or directory }
    . 'in "redis_ratelimit_server" directive');

# a relative name is under nginx's conf prefix (nginx -t's in conftestN/)
my ($rout, $rrc) = $t->nginx_t(with_server("127.0.0.1:$tp tls tls_ca=tls/missing.crt"));
isnt($rrc, 0, 'missing relative tls_ca: nginx -t fails');
like($rout, qr{cannot read tls_ca="\Q$dir\E/conftest\d+/tls/missing\.crt": No such file or directory},
    'missing relative tls_ca: named under the conf prefix');
my $relative = File::Spec->abs2rel($ca->{cert}, "$dir/conftest");
($rout, $rrc) = $t->nginx_t(with_server("127.0.0.1:$tp tls tls_ca=$relative"));
is($rrc, 0, "relative tls_ca=$relative: nginx -t passes") or diag($rout);

my $junk = $t->write_file('tls/junk.crt', "not a certificate\n");
my ($out, $rc, $file, $line) =
    $t->nginx_t_here(with_server("127.0.0.1:$tp tls tls_ca=$junk"));
isnt($rc, 0, 'tls_ca without a certificate: nginx -t fails');
like($out, qr/^nginx: \[emerg\] cannot load tls_ca="\Q$junk\E": .+ in "redis_ratelimit_server" directive in \Q$file:$line\E$/m,
    'tls_ca without a certificate: message');

refused('tls_cert without tls_key',
    "127.0.0.1:$tp tls tls_cert=$client->{cert}",
    '"tls_cert=" needs "tls_key=" in "redis_ratelimit_server" directive');
refused('tls_key without tls_cert',
    "127.0.0.1:$tp tls tls_key=$client->{key}",
    '"tls_key=" needs "tls_cert=" in "redis_ratelimit_server" directive');
refused('tls_ca without tls', "127.0.0.1:$tp tls_ca=$ca->{cert}",
    '"tls_ca=" needs "tls" in "redis_ratelimit_server" directive');
refused('tls_verify without tls', "127.0.0.1:$tp tls_verify=off",
    '"tls_verify=" needs "tls" in "redis_ratelimit_server" directive');
refused('bad tls_verify', "127.0.0.1:$tp tls tls_verify=maybe",
    'invalid value "tls_verify=maybe" in "redis_ratelimit_server" '
    . 'directive, it must be "on" or "off"');
refused('sentinel_tls without sentinel', "127.0.0.1:$tp tls sentinel_tls=off",
    '"sentinel_tls=" needs "sentinel=NAME" in "redis_ratelimit_server" directive');

$t->done_testing;
