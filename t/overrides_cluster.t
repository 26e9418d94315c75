#!/usr/bin/perl

# Live overrides in Redis Cluster (3 primaries + 3 replicas, RRL::Cluster):
# - the override key rrl:{ZONE:KEY}:limit is in the state's slot (CLUSTER
#   KEYSLOT), hashed keys too;
# - an override set through any node with redis-cli -c lands on the
#   primary of that slot and applies: a rate on one primary, unlimited on
#   another, block with a TTL on the third (Retry-After the TTL), a hashed
#   key's; deleted, the zone's rate again;
# - the script reads it where it runs: one EVALSHA per request on the
#   primary of the key's slot, no MOVED, no ASK, no other error;
# - two zones of one location on different primaries: an unlimited one
#   never rejects, the other does, and the unlimited one counts nothing.

use strict;
use warnings;

use Digest::SHA qw(sha1_hex);
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t);
note(sprintf 'cluster of 6 nodes up in %.1f s', $c->{started_in});

my @P = $c->primaries;
is(scalar @P, 3, 'three primaries');

my $slot_map = $c->slot_map;
sub owner_of_slot {
    RRL::Cluster::owner_in($slot_map, $_[0]) // die "slot $_[0] has no owner";
}

my @k = map { $c->key_on($P[$_], 'co', 'k') } 0 .. 2;
my $kb = $c->key_on($P[1], 'cb', 'b');
my $ku = $c->key_on($P[0], 'co', 'u');
my @probe = $c->probe_uris('key');

my $n = $t->start_nginx(<<"EOF");
http {
    redis_ratelimit_server ${\ join ' ', $c->seeds } cluster timeout=1s connect_timeout=1s;

    redis_ratelimit_zone \$arg_key zone=co rate=2r/h algorithm=fixed_window overrides=on;
    redis_ratelimit_zone \$http_x_key zone=ch rate=2r/h algorithm=fixed_window overrides=on;
    redis_ratelimit_zone \$arg_b zone=cb rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone \$arg_key zone=probe rate=1000000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        add_header X-Zone \$redis_ratelimit_zone always;

        location / {
            redis_ratelimit zone=co;
        }
        location /h/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=ch;
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=co;
            redis_ratelimit zone=cb;
        }
        location /probe/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=probe;
        }
    }
}
EOF
ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 10), 'limiting from the cluster');

my $now = $c->window_left(3600, 30);    # 30 s left in this hour
my $w = int($now / 3600);

sub slot { scalar $c->cli($P[0], 'CLUSTER', 'KEYSLOT', $_[0]) }

# redis-cli -c through a node that does not own the slot (any node works);
# the MOVED replies it gets, by node
my %moved;
sub set_via {
    my ($via, @cmd) = @_;
    $moved{$via}++ if owner_of_slot(slot($cmd[1])) != $via;
    return scalar RRL::Test::run_command(RRL::Test::redis_cli_binary(),
        '-c', '-h', '127.0.0.1', '-p', $via, '--raw', @cmd);
}

sub get_on {
    my ($key, $rkey) = @_;
    return scalar $c->cli(owner_of_slot(slot($rkey)), 'GET', $rkey);
}

# the override key is in the state's slot, on the key's primary

for my $i (0 .. 2) {
    my $lk = "rrl:{co:$k[$i]}:limit";
    is(slot($lk), slot("rrl:{co:$k[$i]}:fw"), "key $k[$i]: the override in the state's slot");
    is(owner_of_slot(slot($lk)), $P[$i], "key $k[$i]: on primary $i");
}
my $long = 'L' x 150;
my $hashed = '#' . sha1_hex($long);
is(slot("rrl:{ch:$hashed}:limit"), slot("rrl:{ch:$hashed}:fw"),
    'a hashed key: the override in the state\'s slot');

$c->reset_stats;
%moved = ();

# a rate on primary 0, set through primary 1
is(set_via($P[1], 'SET', "rrl:{co:$k[0]}:limit", '5r/h burst=1'), 'OK',
    'a rate set through another node with -c');
is($c->cli($P[0], 'GET', "rrl:{co:$k[0]}:limit"), '5r/h burst=1',
    'and stored on the primary of its slot');
for my $i (1 .. 7) {
    my $r = $n->get("/?key=$k[0]");
    is($r->{status}, $i <= 6 ? 200 : 429, "rate on primary 0, $i: status");
    is($r->{h}{'x-ratelimit-limit'}, 6, "rate on primary 0, $i: Limit 6");
}
is(get_on($k[0], "rrl:{co:$k[0]}:fw"), "$w:6", 'rate: 6 counted on primary 0');

# unlimited on primary 1
set_via($P[2], 'SET', "rrl:{co:$k[1]}:limit", 'unlimited');
my @st = map { $n->get("/?key=$k[1]") } 1 .. 6;
is(join(' ', map { $_->{status} } @st), join(' ', (200) x 6), 'unlimited on primary 1: all pass');
ok(!(grep { defined $_->{h}{'x-ratelimit-limit'} } @st), 'unlimited: no X-RateLimit-Limit');
is(scalar $c->cli($P[1], 'EXISTS', "rrl:{co:$k[1]}:fw"), 0, 'unlimited: nothing counted');

# block with a TTL on primary 2
set_via($P[0], 'SET', "rrl:{co:$k[2]}:limit", 'block', 'EX', 100);
my $r = $n->get("/?key=$k[2]");
is($r->{status}, 429, 'block on primary 2: 429');
is($r->{h}{'x-ratelimit-limit'}, 0, 'block: Limit 0');
my $ra = $r->{h}{'retry-after'} // -1;
ok($ra >= 99 && $ra <= 100, "block: Retry-After the TTL ($ra s)");

# a hashed key
set_via($P[0], 'SET', "rrl:{ch:$hashed}:limit", '3r/h');
$r = $n->get('/h/', headers => { 'X-Key' => $long });
is($r->{status}, 200, 'hashed key: 200');
is($r->{h}{'x-ratelimit-limit'}, 3, 'hashed key: the override at its SHA-1');
is(get_on($long, "rrl:{ch:$hashed}:fw"), "$w:1", 'hashed key: counted next to it');

# deleted: the zone's rate (nothing counted under unlimited: 2 pass)
set_via($P[2], 'DEL', "rrl:{co:$k[1]}:limit");
@st = map { $n->get("/?key=$k[1]") } 1 .. 3;
is(join(' ', map { $_->{status} } @st), '200 200 429', 'deleted: the zone\'s 2r/h');
is($st[0]{h}{'x-ratelimit-limit'}, 2, 'deleted: the zone\'s Limit');

{
    my (%evalsha, %errors);
    for my $p (@P) {
        $evalsha{$p} = $c->commandstats($p)->{evalsha} // 0;
        my $e = $c->errorstats($p);
        $errors{$p} = join ',', map { "$_=$e->{$_}" } sort keys %$e;
    }
    # requests by primary: 7 (k0), 6 + 3 (k1), 1 (k2), 1 (the hashed key),
    # each one EVALSHA on its key's primary, which read the override there
    my %want = (map { $_ => 0 } @P);
    $want{ $P[0] } += 7;
    $want{ $P[1] } += 9;
    $want{ $P[2] } += 1;
    $want{ owner_of_slot(slot("rrl:{ch:$hashed}:fw")) } += 1;
    is_deeply(\%evalsha, \%want, 'one EVALSHA per request on the primary of its slot');
    is_deeply(\%errors, { map { $_ => $moved{$_} ? "MOVED=$moved{$_}" : '' } @P },
        'no MOVED, ASK or other error but those redis-cli -c followed');
}

# two zones on different primaries in one location: unlimited + 1r/h
set_via($P[1], 'SET', "rrl:{co:$ku}:limit", 'unlimited');
isnt(owner_of_slot(slot("rrl:{co:$ku}:fw")), owner_of_slot(slot("rrl:{cb:$kb}:fw")),
    'two zones: their keys on different primaries');
$r = $n->get("/two/?key=$ku&b=$kb");
is($r->{status}, 200, 'unlimited + 1r/h, 1: 200');
is($r->{h}{'x-zone'}, 'cb', 'unlimited + 1r/h, 1: the other limit shown');
$r = $n->get("/two/?key=$ku&b=$kb");
is($r->{status}, 429, 'unlimited + 1r/h, 2: rejected by the other limit');
is($r->{h}{'x-zone'}, 'cb', 'unlimited + 1r/h, 2: by cb');
is(scalar $c->cli($P[0], 'EXISTS', "rrl:{co:$ku}:fw"), 0,
    'unlimited + 1r/h: nothing counted in the unlimited zone');

$t->done_testing;
