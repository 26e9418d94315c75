#!/usr/bin/perl

# The half-open probe whose request goes away before its batch is sent
# (HTTP/2 HEADERS followed at once by RST_STREAM: the stream is gone in the
# same turn) is abandoned, and the next request probes: limiting resumes.
# It used to stay "out" forever, every later request refused by the circuit.
# Also a location with two limits: after a stall, limiting resumes within
# cooldown + timeout.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=100ms
                           max_failures=3 cooldown=500ms;
    redis_ratelimit_zone $arg_key zone=a rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=b rate=1000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        listen 127.0.0.1:%%PORT_1%% http2;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=a;
            redis_ratelimit zone=b;
        }
    }
}
EOF2

# HTTP/2 with prior knowledge: the preface, SETTINGS, then HEADERS (GET
# $path, END_STREAM) and RST_STREAM (CANCEL) of stream 1 in one write
sub h2_headers_then_reset {
    my ($port, $path) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port)
        or die "connect: $!";
    my $frame = sub {
        my ($type, $flags, $sid, $payload) = @_;
        my $len = length $payload;
        return pack('CnCCN', $len >> 16, $len & 0xffff, $type, $flags, $sid)
            . $payload;
    };
    # HPACK: :method GET, :scheme http (indexed); :path, :authority
    # (literal, indexed name, without indexing)
    my $block = "\x82\x86" . "\x04" . chr(length $path) . $path
        . "\x01\x09localhost";
    syswrite($s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
        . $frame->(0x4, 0, 0, '')
        . $frame->(0x1, 0x5, 1, $block)
        . $frame->(0x3, 0, 1, pack('N', 0x8)));
    sleep 0.2;
    close $s;
}

sub status { $n->get($_[0])->{h}{'x-rl-status'} // 'none' }

# the first time until a request is decided by Redis again
sub until_passed {
    my ($limit) = @_;
    my $start = time;
    while (time - $start < $limit) {
        return time - $start if status('/?key=r' . int(rand(1e9))) eq 'PASSED';
        sleep 0.02;
    }
    return undef;
}

is(status('/?key=a'), 'PASSED', 'Redis up: PASSED');

# a stall: three timeouts open the circuit
$t->signal_redis('STOP');
is(status("/?key=s$_"), 'FAILED_OPEN', "stalled, request $_: FAILED_OPEN") for 1 .. 3;
ok($n->wait_log(qr/circuit open/, 1, 2), 'the circuit opened');
$t->signal_redis('CONT');
my $opened = time;

# within cooldown + timeout, a request probes and limiting resumes
my $took = until_passed(3);
ok(defined $took && time - $opened < 0.5 + 0.1 + 0.3,
    sprintf('two limits: limiting resumes %.2f s after the stall', time - $opened));

# again, and this time the probe is taken by a stream reset at once
$t->signal_redis('STOP');
status("/?key=t$_") for 1 .. 3;
$t->signal_redis('CONT');
sleep 0.6;    # the cooldown is over: the next request is the probe

h2_headers_then_reset($n->port(1), '/?key=h2');
ok($n->wait_log(qr/client canceled stream 1|client prematurely closed|client closed/, 1, 2),
    'the stream was reset while its request waited');

$took = until_passed(2);
ok(defined $took && $took < 0.6,
    'the abandoned probe: the next request probes, limiting resumes'
    . (defined $took ? sprintf(' (%.2f s)', $took) : ' (never)'));
ok($n->wait_log(qr/answers again, circuit closed/, 2, 2), 'the circuit closed again');

$t->done_testing;
