#!/usr/bin/perl

# TLS to a Redis Cluster (RRL::Cluster with tls: three primaries serving
# TLS on their ports, with tls-cluster, and plain TCP on others; CLUSTER
# SLOTS names the TLS ports to a TLS client, the plain ones to a plain
# client). nginx is given one seed and `cluster tls tls_ca=`:
# - it learns the other primaries' TLS ports and connects to each with
#   TLS; limits exact on every primary (3 PASSED, then REJECTED), the keys
#   where their slots are; no tls_handshake error;
# - a wrong CA: fail open FAILED_OPEN, fail closed 429, the handshake
#   failure logged and counted.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;
use RRL::Cluster;
use RRL::Tls;

my $t = RRL::Test->new;
my ($ca, $other_ca, $srv) = RRL::Tls::setup($t);

my $c = RRL::Cluster->new($t, primaries => 3, replicas => 0, tls => $srv);
note(sprintf 'cluster of 3 over TLS up in %.1f s', $c->{started_in});

my @P = $c->primaries;
is(join(' ', map { $_->[2] } @{ $c->slot_map }), "@P",
    'CLUSTER SLOTS over TLS: the TLS ports');
my @plain = map { $c->plain_port($_) } @P;
my @plain_slots = RRL::Test::run_command(RRL::Test::redis_cli_binary(),
    '-h', '127.0.0.1', '-p', $plain[0], '--raw', 'CLUSTER', 'SLOTS');
ok(!(grep { my $p = $_; grep { $_ eq $p } @P } @plain_slots)
    && (grep { my $p = $_; grep { $_ eq $p } @plain } @plain_slots) == 3,
    "CLUSTER SLOTS over plain TCP: the plain ports (@plain)")
    or diag("@plain_slots");

sub with_server { RRL::Tls::nginx_conf('tc', @_) }

# a good certificate, one seed

my $n = $t->start_nginx(with_server("127.0.0.1:$P[0] cluster tls tls_ca=$ca->{cert}"));

for my $p (@P) {
    my $key = $c->key_on($p, 'tc', "on$p-");
    my @s = map { RRL::Tls::status($n->get("/?key=$key")) } 1 .. 4;
    is("@s", '200 PASSED 200 PASSED 200 PASSED 429 REJECTED',
        "primary $p: limits exact");
    ok((grep { /^rrl:\{tc:\Q$key\E\}/ } $c->rrl_keys($p)),
        "primary $p: the key there");
}

for my $p (@P) {
    ok($n->grep_log(qr/connected to 127\.0\.0\.1:$p with TLS/),
        "primary $p: connected with TLS");
    my @m = $c->module_clients($p);
    ok(@m >= 1 && !grep({ !/laddr=127\.0\.0\.1:$p / } @m),
        "primary $p: the module's connections on its TLS port")
        or diag(join "\n", @m);
}
is(RRL::Tls::handshake_errors($n), 0, 'no tls_handshake error');

# a wrong CA

my $n2 = $t->start_nginx(
    with_server("127.0.0.1:$P[0] cluster tls tls_ca=$other_ca->{cert}"),
    wait_connected => 0);
ok($n2->wait_log(qr/\[error\] .*TLS handshake with 127\.0\.0\.1:$P[0] failed: certificate verify failed/, 1, 5),
    'wrong CA: the handshake failure logged')
    or diag(join "\n", $n2->grep_log(qr/redis_ratelimit/));
is(RRL::Tls::status($n2->get('/?key=w')), '200 FAILED_OPEN', 'wrong CA: fail open');
is(RRL::Tls::status($n2->get('/closed/?key=w')), '429 FAILED_CLOSED',
    'wrong CA: fail closed');
cmp_ok(RRL::Tls::handshake_errors($n2), '>=', 1, 'wrong CA: counted as tls_handshake');
ok(!$n2->grep_log(qr/connected to/), 'wrong CA: never connected');

$t->done_testing;
