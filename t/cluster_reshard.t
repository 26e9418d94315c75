#!/usr/bin/perl

# Resharding under traffic (Redis Cluster of 3 primaries, RRL::Cluster):
# a background client sends a request for each of 18 keys every 30 ms
# while the slots of those keys move between primaries by hand
# (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE):
#   1. slot A (12 keys) from primary 1 to primary 2, one key per MIGRATE,
#      80 ms apart: moved keys answer ASK, the others are still served by
#      the source, then MOVED once the slot has moved;
#   2. slot B (6 keys): 0.4 s MIGRATING with no key moved yet, all keys in
#      one MIGRATE, then 0.4 s with every key moved but the slot not yet
#      reassigned (every call ASK);
#   3. slot A back from primary 2 to primary 1, four keys per MIGRATE;
#   4. slot B and 499 others from primary 3 to primary 2 by redis-cli
#      --cluster reshard.
# Asserted: every response is 200 PASSED (no 5xx, no FAILED_*: MOVED and
# ASK are followed); for each key, the count in Redis (on the primary that
# serves it at the end) equals the PASSED responses exactly (no count lost
# or doubled by a redirection), and topping the key up afterwards lets
# exactly rate - count more through: the limit is exact across the moves.
# The ASK and MOVED replies the nodes sent are printed.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $N = 250;    # per day: nothing decays during the test

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, replicas => 0);
note(sprintf 'cluster of 3 primaries up in %.1f s', $c->{started_in});

my @P = $c->primaries;
is(scalar @P, 3, 'three primaries');

# two slots of primary 1, and keys of zone rs in them
my $key_a = $c->key_on($P[0], 'rs', 'sa');
my $slot_a = RRL::Cluster::rrl_slot('rs', $key_a);
my $slot_b;
for (my $i = 0; ; $i++) {
    my $k = $c->key_on($P[0], 'rs', 'sb', $i);
    $slot_b = RRL::Cluster::rrl_slot('rs', $k);
    last if $slot_b != $slot_a;
}
my @keys_a = RRL::Cluster::keys_in_slot($slot_a, 12, 'rs', 'a');
my @keys_b = RRL::Cluster::keys_in_slot($slot_b, 6, 'rs', 'b');
my @keys = (@keys_a, @keys_b);

my $n = $t->start_nginx(<<"EOF");
worker_processes 2;

http {
    redis_ratelimit_server @{[ $c->seeds ]} cluster
                           timeout=1s connect_timeout=1s;
    redis_ratelimit_zone \$arg_key zone=rs rate=${N}r/d;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=rs;
    }
}
EOF

my @probe = map { '/?key=' . $c->key_on($_, 'rs', 'p') } @P;
ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 10), 'limiting from the cluster');
{
    my $deadline = time + 5;
    sleep 0.1 while time < $deadline
        && grep { $c->module_clients($_) != 2 } @P;
}

$c->reset_stats;

my $load = RRL::Load->start($t, $n->port, [map { "/?key=$_" } @keys],
    interval => 0.03, rounds => $N - 20);
$load->wait_rounds(10);

my @phases;

sub phase {
    my ($name, $slot, $to, %o) = @_;
    my $start = time;
    my $r = $c->migrate_slot($slot, $to, %o);
    push @phases, [$name, $start, time, $r];
    note(sprintf '%s: slot %d from %d to %d, %d keys, %.2f s', $name, $slot,
        $r->{from}, $r->{to}, $r->{keys}, $r->{seconds});
    $load->wait_rounds($load->rounds_done + 5);
    return $r;
}

my $r1 = phase('slot A, one key at a time', $slot_a, $P[1],
    batch => 1, pause => 0.08);
my $r2 = phase('slot B, long MIGRATING windows', $slot_b, $P[2],
    batch => 100, before_keys => sub { sleep 0.4 }, after_keys => sub { sleep 0.4 });
my $r3 = phase('slot A back, four keys at a time', $slot_a, $P[0],
    batch => 4, pause => 0.05);

# 4. slot B once more, by redis-cli --cluster reshard of 500 slots (long
#    enough to overlap traffic): it moves the source's lowest slots first,
#    and slot B is now the lowest of primary 3
my ($lowest) = sort { $a <=> $b } map { $_->[0] } grep { $_->[2] == $P[2] } @{ $c->slot_map };
is($lowest, $slot_b, 'slot B is the lowest slot of primary 3');
{
    my $start = time;
    $c->reshard_cli(500, $P[2], $P[1]);
    push @phases, ['slot B by redis-cli --cluster reshard', $start, time, {}];
    note(sprintf 'slot B by redis-cli --cluster reshard: from %d to %d, %.2f s',
        $P[2], $P[1], time - $start);
    $load->wait_rounds($load->rounds_done + 5);
}
is($c->slot_owner($slot_b), $P[1], 'redis-cli --cluster reshard moved slot B to primary 2');

my @rec = $load->stop;

is("$r1->{keys} $r2->{keys} $r3->{keys}", '12 6 12', 'every key was migrated');

my $rounds = @rec / @keys;
cmp_ok($rounds, '<', $N - 10, "$rounds rounds, fewer than the limit");

for my $ph (@phases) {
    my ($name, $start, $end) = @$ph;
    my @during = grep { $_->{end} >= $start && $_->{start} <= $end } @rec;
    cmp_ok(scalar @during, '>=', 3 * @keys, "$name: traffic while it ran ("
        . scalar(@during) . ' requests: ' . RRL::Load::tally(map { $_->{rl} } @during) . ')');
}

my @bad = grep { $_->{status} ne '200' || $_->{rl} ne 'PASSED' } @rec;
is(scalar @bad, 0, scalar(@rec) . ' requests during the resharding: all 200 PASSED')
    or diag(RRL::Load::tally(map { "$_->{status} $_->{rl}" } @bad) . "\n"
        . join "\n", map { sprintf '%.3f %s %s %s', $_->{end}, @$_{qw(uri status rl)} }
            @bad[0 .. ($#bad < 9 ? $#bad : 9)]);

{
    my (%redirects, @lines);
    for my $p (@P) {
        my $e = $c->errorstats($p);
        push @lines, "$p: " . join(', ', map { "$_ $e->{$_}" } sort keys %$e);
    }
    note('error replies of the nodes during the run: ' . join('; ', @lines));
}

# counts: Redis has exactly the passes

my (%passed, %count);
$passed{ ($_->{uri} =~ /key=(\S+)/)[0] }++ for grep { $_->{rl} eq 'PASSED' } @rec;
my %final_owner = ((map { $_ => $P[0] } @keys_a), (map { $_ => $P[1] } @keys_b));
for my $k (@keys) {
    my $v = $c->cli($final_owner{$k}, 'GET', RRL::Cluster::rrl_key('rs', $k));
    my (undef, $cur, $prev) = split /:/, $v;
    $count{$k} = ($cur // 0) + ($prev // 0);
}
is_deeply(\%count, { map { $_ => $passed{$_} // 0 } @keys },
    'per key, the count in Redis (on the primary serving it now) is the number '
    . 'of PASSED responses');

# top up: exactly N - count more pass

my %more;
for my $k (@keys) {
    my $left = $N - ($count{$k} // 0);
    my @uris = map { "/?key=$k" } 1 .. $left + 3;
    while (my @batch = splice @uris, 0, 100) {
        for my $r ($n->parallel(@batch)) {
            my $st = $r->{h}{'x-rl-status'} // 'none';
            $more{$k}{$st}++;
        }
    }
}
is_deeply(\%more, { map { $_ => { PASSED => $N - ($count{$_} // 0), REJECTED => 3 } } @keys },
    "topping up: exactly $N passes per key over the whole run");

$t->done_testing;
