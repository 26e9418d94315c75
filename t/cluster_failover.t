#!/usr/bin/perl

# Failovers under traffic (Redis Cluster of 3 primaries + 3 replicas,
# cluster-node-timeout 1000 ms, RRL::Cluster), nginx with two workers
# given every node as a seed, timeout=1s:
# (a) a planned CLUSTER FAILOVER on the replica of primary 1 while a
#     background client sends requests for 6 keys it serves (and 4 keys of
#     the other primaries): every response is 200 PASSED or, for a short
#     window (within 3 s of the failover), 200 FAILED_OPEN (their number is
#     printed); the last rounds all PASSED; no count lost: per key, the
#     count on the new primary is at least the PASSED responses and at
#     most PASSED + FAILED_OPEN; the workers connect to the new primary.
# (b) kill -9 of primary 2 while the client sends requests for 6 of its
#     keys to a fail-open and a fail-closed (503) location: the clients see
#     only 200 PASSED, 200 FAILED_OPEN or 503 FAILED_CLOSED, never anything
#     else; once the replica is promoted, the keys of the dead primary are
#     PASSED again, for good, within 10 s of the kill. Printed: kill ->
#     promotion, kill -> first PASSED and -> PASSED for good, promotion ->
#     first PASSED, and how many counts the failover lost (Redis' async
#     replication).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $RECOVER_MAX = 10;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, node_timeout => 1000);
note(sprintf 'cluster of 6 nodes up in %.1f s', $c->{started_in});

my @P = $c->primaries;
is(scalar @P, 3, 'three primaries');
my %rep = map { $_ => ($c->replicas_of($_))[0] } @P;
ok(!(grep { !defined $rep{$_} } @P), 'each primary has a replica');

my $seeds = $c->seeds($c->ports);

my $n = $t->start_nginx(<<"EOF");
worker_processes 2;

http {
    redis_ratelimit_server $seeds cluster timeout=1s connect_timeout=1s;
    redis_ratelimit_zone \$arg_key zone=fo rate=100000r/d;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=fo;

        location /open/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail open;
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
            redis_ratelimit_status 503;
        }
    }
}
EOF

ok(RRL::Load::wait_status($n, [map { '/open/?key=' . $c->key_on($_, 'fo', 'p') } @P],
    'PASSED', 10), 'limiting from the cluster');

sub wait_connections {
    my ($p, $want, $timeout) = @_;
    my $deadline = time + $timeout;
    my $got = $c->module_clients($p);
    while ($got != $want && time < $deadline) {
        sleep 0.05;
        $got = $c->module_clients($p);
    }
    return $got;
}

is(join(' ', map { wait_connections($_, 2, 5) } @P), '2 2 2',
    'two connections per primary');

sub key_of { ($_[0]{uri} =~ /key=([^&\s]+)/)[0] }

sub count_on {
    my ($p, $k) = @_;
    my $v = $c->cli($p, 'GET', RRL::Cluster::rrl_key('fo', $k));
    my (undef, $cur, $prev) = split /:/, $v;
    return ($cur // 0) + ($prev // 0);
}

############################################################################
# (a) planned failover

{
    my $old = $P[0];
    my $new = $rep{$old};
    my @fk = map { $c->key_on($old, 'fo', 'g', $_) } 0 .. 5;
    my @ck = map { $c->key_on($_, 'fo', 'gc', 0), $c->key_on($_, 'fo', 'gc', 1) }
        @P[1, 2];

    my $load = RRL::Load->start($t, $n->port,
        [map { "/open/?key=$_" } @fk, @ck], interval => 0.03);
    $load->wait_rounds(10);

    my $start = time;
    my $took = $c->failover($new);
    my $end = time;
    note(sprintf '(a) CLUSTER FAILOVER: %d promoted in %.3f s', $new, $took);

    $load->wait_rounds($load->rounds_done + 30);
    my @rec = $load->stop;

    is($c->role($new) . ' ' . $c->role($old), 'master slave',
        "(a) $new is the primary, $old its replica");

    my @bad = grep { !($_->{status} eq '200'
        && ($_->{rl} eq 'PASSED' || $_->{rl} eq 'FAILED_OPEN')) } @rec;
    is(scalar @bad, 0, '(a) ' . scalar(@rec) . ' requests: 200 PASSED or 200 '
        . 'FAILED_OPEN only') or diag(RRL::Load::tally(map { "$_->{status} $_->{rl}" } @bad));

    my @failed = grep { $_->{rl} eq 'FAILED_OPEN' } @rec;
    my @late = grep { $_->{end} < $start - 0.1 || $_->{start} > $start + 3 } @failed;
    note(sprintf '(a) FAILED_OPEN: %d of %d requests (%d of the failed-over '
        . 'primary\'s keys)', scalar @failed, scalar @rec,
        scalar(grep { my $k = key_of($_); grep { $_ eq $k } @fk } @failed));
    is(scalar @late, 0, '(a) FAILED_OPEN only within 3 s of the failover');

    my $last_round = $rec[-1]{round};
    my @tail = grep { $_->{round} > $last_round - 10 } @rec;
    is(RRL::Load::tally(map { $_->{rl} } @tail),
        'PASSED x' . scalar(@tail), '(a) the last 10 rounds: all PASSED');

    my (%passed, %fail, %bounds);
    for (@rec) {
        $passed{ key_of($_) }++ if $_->{rl} eq 'PASSED';
        $fail{ key_of($_) }++ if $_->{rl} eq 'FAILED_OPEN';
    }
    for my $k (@fk) {
        my $cnt = count_on($new, $k);
        my ($lo, $hi) = ($passed{$k} // 0, ($passed{$k} // 0) + ($fail{$k} // 0));
        $bounds{$k} = $cnt >= $lo && $cnt <= $hi ? 'ok' : "count $cnt, not in $lo .. $hi";
    }
    is_deeply(\%bounds, { map { $_ => 'ok' } @fk }, '(a) per key, the count on the '
        . 'new primary is between PASSED and PASSED + FAILED_OPEN: no count lost');

    is(wait_connections($new, 2, 5), 2, '(a) both workers connected to the new primary');
    note('(a) module connections left on the old primary (now a replica): '
        . scalar($c->module_clients($old)));
}

############################################################################
# (b) kill -9 of a primary

{
    my $dead = $P[1];
    my $heir = $rep{$dead};
    my @dk = map { $c->key_on($dead, 'fo', 'd', $_) } 0 .. 5;
    my @others = grep { $_ != $dead } $c->primaries;
    my @ck = map { $c->key_on($_, 'fo', 'dc', 0), $c->key_on($_, 'fo', 'dc', 1) }
        @others;

    $c->reset_stats;
    my $load = RRL::Load->start($t, $n->port,
        [(map { ("/open/?key=$_", "/closed/?key=$_") } @dk),
         (map { "/open/?key=$_" } @ck)], interval => 0.03, timeout => 15);
    $load->wait_rounds(10);

    my $kill = $c->kill_node($dead);
    my $promoted = $c->wait_promoted($heir, 15);
    ok(defined $promoted, "(b) replica $heir promoted");
    note(sprintf '(b) kill -9 of %d -> %d promoted: %.3f s', $dead, $heir,
        ($promoted // time) - $kill);

    # until the dead primary's keys have been PASSED for 2 s, at most
    # $RECOVER_MAX + 2 s after the kill
    my $deadline = $kill + $RECOVER_MAX + 2;
    while (time < $deadline) {
        my @r = grep { $_->{end} > $kill } $load->records;
        my @d = grep { my $k = key_of($_); grep { $_ eq $k } @dk } @r;
        my ($last_bad) = reverse grep { $_->{rl} ne 'PASSED' } @d;
        last if @d && $d[-1]{rl} eq 'PASSED'
            && $d[-1]{end} - ($last_bad ? $last_bad->{end} : $kill) > 2;
        sleep 0.1;
    }
    my @rec = $load->stop;

    my @bad = grep { my $u = $_->{uri};
        my $ok = $u =~ m{^/open/}
            ? ($_->{status} eq '200' && ($_->{rl} eq 'PASSED' || $_->{rl} eq 'FAILED_OPEN'))
            : (($_->{status} eq '200' && $_->{rl} eq 'PASSED')
                || ($_->{status} eq '503' && $_->{rl} eq 'FAILED_CLOSED'));
        !$ok } @rec;
    is(scalar @bad, 0, '(b) ' . scalar(@rec) . ' requests: fail open 200 PASSED or '
        . 'FAILED_OPEN, fail closed 200 PASSED or 503 FAILED_CLOSED, nothing else')
        or diag(RRL::Load::tally(map { "$_->{uri} $_->{status} $_->{rl}" } @bad));

    my %is_dk = map { $_ => 1 } @dk;
    my @d = grep { $is_dk{ key_of($_) } } @rec;
    my @after = grep { $_->{end} > $kill } @d;
    my ($first_pass) = grep { $_->{start} > $kill && $_->{rl} eq 'PASSED' } @after;
    my ($last_bad) = reverse grep { $_->{rl} ne 'PASSED' } @after;
    my $for_good = $last_bad
        ? (grep { $_->{end} > $last_bad->{end} && $_->{rl} eq 'PASSED' } @after)[0]
        : $first_pass;

    note('(b) the dead primary\'s keys after the kill: '
        . RRL::Load::tally(map { ($_->{uri} =~ m{^/(\w+)/})[0] . " $_->{status} $_->{rl}" } @after));
    note('(b) the other primaries\' keys after the kill: '
        . RRL::Load::tally(map { $_->{rl} } grep { !$is_dk{ key_of($_) } && $_->{end} > $kill } @rec)
        . ' (cluster-require-full-coverage yes: no slot is served while one has no primary)');
    {
        my @of = grep { !$is_dk{ key_of($_) } && $_->{end} > $kill && $_->{rl} ne 'PASSED' } @rec;
        note(sprintf '(b) the other primaries\' keys failed from %.3f s to %.3f s after the kill',
            $of[0]{end} - $kill, $of[-1]{end} - $kill) if @of;
    }
    note('(b) error replies of the live nodes: ' . join('; ', map { my $e = $c->errorstats($_);
        "$_: " . (join(', ', map { "$_ $e->{$_}" } sort keys %$e) || 'none') } $c->live_ports));

    ok($for_good && $for_good->{end} - $kill <= $RECOVER_MAX,
        sprintf('(b) the dead primary\'s keys PASSED again for good %s after the kill (<= %d s)',
            $for_good ? sprintf('%.3f s', $for_good->{end} - $kill) : 'never', $RECOVER_MAX));
    note(sprintf '(b) recovery: kill -> first PASSED %s, kill -> PASSED for good %s, '
        . 'promotion -> first PASSED %s',
        map { defined $_ ? sprintf('%.3f s', $_) : 'never' }
        ($first_pass ? $first_pass->{end} - $kill : undef),
        ($for_good ? $for_good->{end} - $kill : undef),
        ($first_pass && $promoted ? $first_pass->{end} - $promoted : undef));

    # no request of the dead primary's keys is FAILED after it passed for good
    my @relapse = grep { $for_good && $_->{start} > $for_good->{end} && $_->{rl} ne 'PASSED' } @d;
    is(scalar @relapse, 0, '(b) no failure after that');

    # counts on the new primary: all passes after the kill, and what the
    # replica had of those before it
    my (%lost, %bad_count);
    for my $k (@dk) {
        my @kr = grep { key_of($_) eq $k } @rec;
        my $before = grep { $_->{rl} eq 'PASSED' && $_->{end} <= $kill } @kr;
        my $after = grep { $_->{rl} eq 'PASSED' && $_->{start} > $kill } @kr;
        my $cnt = count_on($heir, $k);
        $lost{$k} = $before + $after - $cnt;
        $bad_count{$k} = "count $cnt < $after passed after the kill" if $cnt < $after;
    }
    is_deeply(\%bad_count, {}, '(b) every pass after the kill is counted on the new primary');
    note('(b) counts lost by the failover (passed before the kill, not replicated): '
        . join(', ', map { "$_ $lost{$_}" } @dk));

    is(wait_connections($heir, 2, 5), 2, '(b) both workers connected to the new primary');
}

$t->done_testing;
