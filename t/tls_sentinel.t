#!/usr/bin/perl

# TLS under Sentinel (RRL::Sentinel with tls: a primary and a replica
# serving TLS only, replicating over TLS; three Sentinels speaking TLS to
# them and to each other, serving TLS and plain TCP):
# - `sentinel=mymaster tls tls_ca=` with the Sentinels' TLS ports: the
#   primary found, connected with TLS (its name checked against its IP),
#   limits exact there, no tls_handshake error;
# - the same with sentinel_tls=off and the Sentinels' plain ports: plain
#   connections to the Sentinels, TLS to the primary, limits exact;
# - a planned failover (SENTINEL FAILOVER): limiting resumes on the new
#   primary, over TLS, exact there;
# - a wrong CA: the fail mode, the handshake failure with the Sentinels
#   logged and counted.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;
use RRL::Sentinel;
use RRL::Load;
use RRL::Tls;

my $t = RRL::Test->new;
my ($ca, $other_ca, $srv) = RRL::Tls::setup($t);

my $s = RRL::Sentinel->new($t, name => 'mymaster', tls => $srv);
note(sprintf 'primary, replica and 3 Sentinels over TLS up in %.1f s',
    $s->{started_in});

sub with_server { RRL::Tls::nginx_conf('ts', @_) }

# limits exact, the key on $primary
sub exact {
    my ($inst, $key, $primary, $name) = @_;
    my @st = map { RRL::Tls::status($inst->get("/?key=$key")) } 1 .. 4;
    is("@st", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
        "$name: limits exact");
    ok(grep({ /^rrl:\{ts:\Q$key\E\}/ } $s->cli($primary, 'KEYS', 'rrl:*')),
        "$name: the key on the primary ($primary)");
}

my @sp = $s->sentinel_ports;
my @stls = map { $s->{sentinels}{$_}{tls_port} } @sp;
my $primary = $s->primary;
my $tls = "sentinel=mymaster tls tls_ca=$ca->{cert}";

# TLS to the Sentinels and to the primary

my $n = $t->start_nginx(with_server($s->seeds(tls => 1) . " $tls"));
ok($n->wait_log(qr/connected to 127\.0\.0\.1:$primary with TLS/, 1, 5),
    "sentinel_tls: connected to the primary ($primary) with TLS");
my $stls = join '|', @stls;
ok($n->grep_log(qr/connected to 127\.0\.0\.1:(?:$stls) with TLS/),
    'sentinel_tls: connected to a Sentinel with TLS');
exact($n, 'a', $primary, 'sentinel_tls');
my @m = grep { /name=nginx-redis-ratelimit/ } $s->cli($primary, 'CLIENT', 'LIST');
ok(@m == 1 && $m[0] =~ /laddr=127\.0\.0\.1:$primary /,
    'sentinel_tls: the module connected to the primary')
    or diag(join "\n", @m);
is(RRL::Tls::handshake_errors($n), 0, 'sentinel_tls: no tls_handshake error');

# plain Sentinels, TLS to the primary

my $n2 = $t->start_nginx(with_server($s->seeds . " $tls sentinel_tls=off"));
ok($n2->wait_log(qr/connected to 127\.0\.0\.1:$primary with TLS/, 1, 5),
    'sentinel_tls=off: connected to the primary with TLS');
my $sp = join '|', @sp;
ok($n2->grep_log(qr/connected to 127\.0\.0\.1:(?:$sp)$/),
    'sentinel_tls=off: connected to a Sentinel without TLS');
ok(!$n2->grep_log(qr/connected to 127\.0\.0\.1:(?:$sp) with TLS/),
    'sentinel_tls=off: no TLS to the Sentinels');
exact($n2, 'b', $primary, 'sentinel_tls=off');
is(RRL::Tls::handshake_errors($n2), 0, 'sentinel_tls=off: no tls_handshake error');
$n2->stop;

# a planned failover

my $old = $primary;
my $took = $s->failover;
$primary = $s->primary;
note(sprintf 'failover %d -> %d in %.1f s', $old, $primary, $took);
ok(RRL::Load::wait_status($n, ['/?key=after1'], 'PASSED', 10),
    'failover: limiting resumed');
ok($n->wait_log(qr/connected to 127\.0\.0\.1:$primary with TLS/, 1, 5),
    "failover: connected to the new primary ($primary) with TLS");
exact($n, 'c', $primary, 'failover');
is(RRL::Tls::handshake_errors($n), 0, 'failover: no tls_handshake error');

# a wrong CA

my $n3 = $t->start_nginx(with_server($s->seeds(tls => 1)
    . " sentinel=mymaster tls tls_ca=$other_ca->{cert}"), wait_connected => 0);
ok($n3->wait_log(qr/\[error\] .*TLS handshake with 127\.0\.0\.1:(?:$stls) failed: certificate verify failed/, 1, 5),
    'wrong CA: the handshake failure with a Sentinel logged')
    or diag(join "\n", $n3->grep_log(qr/redis_ratelimit/));
is(RRL::Tls::status($n3->get('/?key=w')), '200 FAILED_OPEN', 'wrong CA: fail open');
is(RRL::Tls::status($n3->get('/closed/?key=w')), '429 FAILED_CLOSED',
    'wrong CA: fail closed');
cmp_ok(RRL::Tls::handshake_errors($n3), '>=', 1, 'wrong CA: counted as tls_handshake');
ok(!$n3->grep_log(qr/connected to/), 'wrong CA: never connected');

$t->done_testing;
