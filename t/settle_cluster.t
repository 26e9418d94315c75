#!/usr/bin/perl

# settle= (issue 17) in Redis Cluster (3 primaries, RRL::Cluster): the
# settlement goes to the key's slot.
# - one zone: estimate 100, actual 30: the state on the primary of the
#   key's slot counts 30, the next request sees 870; a debt beyond the
#   limit: the next request is rejected;
# - two zones of one location whose keys are in slots on two primaries (a
#   fixed window, a token bucket): each primary's state settled with its
#   own value (the settlement split by slot), one EVALSHA more on each;
# - keys in many slots, on every primary: each settled where it lives;
# - no MOVED, no ASK, no other error on any node.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;
use RRL::Upstream;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, replicas => 0);
note(sprintf 'cluster of 3 nodes up in %.1f s', $c->{started_in});
my $u = RRL::Upstream->start($t);

my @P = $c->primaries;
is(scalar @P, 3, 'three primaries');

my $ka = $c->key_on($P[0], 'ca', 'a');
my $ka2 = $c->key_on($P[0], 'ca', 'a', 1);
my $kb = $c->key_on($P[1], 'cb', 'b');
my @probe = $c->probe_uris('a');

my $conf = <<'EOF';
http {
    redis_ratelimit_server %%SEEDS%% cluster timeout=1s connect_timeout=1s;

    redis_ratelimit_zone $arg_a zone=ca rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_b zone=cb rate=1000r/h burst=1000 algorithm=token_bucket;
    redis_ratelimit_zone $arg_a zone=probe rate=1000000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }
        location /a/ {
            redis_ratelimit zone=ca cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /a-c/ {
            redis_ratelimit zone=ca cost=100;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /two/ {
            redis_ratelimit zone=ca cost=100 settle=$upstream_http_x_usage_total_tokens;
            redis_ratelimit zone=cb cost=10 settle=$arg_act;
            proxy_pass http://127.0.0.1:%%UPSTREAM%%/;
        }
        location /probe/ {
            root %%TESTDIR%%/html;
            redis_ratelimit zone=probe;
        }
    }
}
EOF
my $seeds = $c->seeds;
my $up = $u->port;
$conf =~ s/%%SEEDS%%/$seeds/;
$conf =~ s/%%UPSTREAM%%/$up/g;
$t->write_file('html/probe/index.html', "OK\n");

my $n = $t->start_nginx($conf);
ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 10), 'limiting from the cluster');

my $now = $c->window_left(3600, 60);    # 60 s left in this hour
my $w = int($now / 3600);
$c->reset_stats;    # the start's MOVED, if any, are not the settlements'

sub count_on { $c->fw_count($_[0], $_[1], $w) }

sub counts {
    join ' ', map { $_ // 'none' }
        $n->zone_metrics('settlements_total', $_[0], 'result', qw(settled settle_failed));
}

sub wait_counts {
    my ($zone, $want) = @_;
    my $deadline = time + 5;
    while (time < $deadline) {
        return 1 if counts($zone) eq $want;
        sleep 0.02;
    }
    return 0;
}

sub evalsha { $c->commandstats($_[0])->{evalsha} // 0 }

# one zone

{
    my $r = $n->get("/a/?a=$ka&usage=30");
    is($r->{status}, 200, 'one zone: 200');
    is($r->{h}{'x-ratelimit-remaining'}, 900, 'one zone: 900 after the estimate');
    ok(wait_counts('ca', '1 0'), 'one zone: settled') or diag(counts('ca'));
    is(count_on($P[0], "rrl:{ca:$ka}:fw"), 30, "one zone: the key's primary counts 30");
    # SCAN, not GET: a GET of another slot's key would be a MOVED
    is(scalar(grep { /^rrl:\{ca:\Q$ka\E\}/ } $c->rrl_keys($_)), 0,
        "one zone: primary $_ has nothing") for @P[1, 2];
    $r = $n->get("/a-c/?a=$ka");
    is($r->{h}{'x-ratelimit-remaining'}, 870, 'one zone: the next sees 870');

    $r = $n->get("/a/?a=$ka2&usage=1500");
    is($r->{status}, 200, 'debt: 200');
    ok(wait_counts('ca', '2 0'), 'debt: settled');
    is(count_on($P[0], "rrl:{ca:$ka2}:fw"), 1500, 'debt: the key\'s primary counts 1500');
    $r = $n->get("/a-c/?a=$ka2");
    is($r->{status}, 429, 'debt: the next is rejected');
    ok(($r->{h}{'retry-after'} // 0) >= 1, 'debt: with Retry-After');
}

# two zones, two primaries

{
    isnt($c->slot_owner(RRL::Cluster::rrl_slot('ca', $ka)),
        $c->slot_owner(RRL::Cluster::rrl_slot('cb', $kb)),
        'two zones: their keys on different primaries');
    my $ka3 = $c->key_on($P[0], 'ca', 'a', 2);
    sleep 0.2;
    my @e0 = map { evalsha($_) } @P;
    my $r = $n->get("/two/?a=$ka3&b=$kb&usage=30&act=25");
    is($r->{status}, 200, 'two zones: 200');
    ok(wait_counts('ca', '3 0') && wait_counts('cb', '1 0'), 'two zones: settled')
        or diag(counts('ca') . ' / ' . counts('cb'));
    is(count_on($P[0], "rrl:{ca:$ka3}:fw"), 30, 'two zones: ca on its primary: 30');
    my ($tokens) = split /:/, ($c->cli($P[1], 'GET', "rrl:{cb:$kb}:tb") // '');
    ok(defined $tokens && abs($tokens - 975) < 1,
        'two zones: cb on its primary: 1000 - 25 tokens (' . ($tokens // 'none') . ')');
    sleep 0.2;
    my @e1 = map { evalsha($_) } @P;
    is(join(' ', map { $e1[$_] - $e0[$_] } 0 .. 2), '2 2 0',
        'two zones: a check and a settlement on each of the two primaries');
}

# keys in many slots, on every primary

{
    my @keys = map { my $p = $_; map { $c->key_on($p, 'ca', "m$p-", $_) } 0 .. 3 } @P;
    my @r = map { $n->get("/a/?a=$_&usage=" . (10 + length $_)) } @keys;
    is(scalar(grep { $_->{status} == 200 } @r), scalar @keys,
        scalar(@keys) . ' keys on 3 primaries: 200');
    ok(wait_counts('ca', (3 + @keys) . ' 0'), 'many keys: settled')
        or diag(counts('ca'));
    my @bad;
    for my $k (@keys) {
        my $owner = $c->slot_owner(RRL::Cluster::rrl_slot('ca', $k));
        my $got = count_on($owner, "rrl:{ca:$k}:fw");
        push @bad, "$k:$got" if $got != 10 + length $k;
    }
    is("@bad", '', 'many keys: each settled on its own primary');
}

{
    my %errors;
    for my $p (@P) {
        my $e = $c->errorstats($p);
        $errors{$p} = join ',', map { "$_=$e->{$_}" } sort keys %$e;
    }
    is_deeply(\%errors, { map { $_ => '' } @P }, 'no MOVED, ASK or other error');
}

$t->done_testing;
