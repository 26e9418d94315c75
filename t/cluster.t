#!/usr/bin/perl

# Redis Cluster (3 primaries + 3 replicas, RRL::Cluster), nginx with two
# workers given one replica as its only seed:
# - the module finds the primaries and keeps exactly one connection per
#   primary per worker (CLIENT LIST, named nginx-redis-ratelimit), none to
#   the replicas once settled;
# - 1,000 keys spread over all slots (and so over the 3 primaries, counted
#   per primary with SCAN): rate=3r/h, five rounds of concurrent requests:
#   exactly PASSED 2, 1, 0 remaining, then REJECTED twice, for every key;
#   each call goes straight to the primary owning the slot: no MOVED, no
#   ASK, exactly one EVALSHA per request on the right primary (round 5
#   from the deny cache)
#   (INFO errorstats, commandstats);
# - 40 keys, 6 concurrent requests each: exactly 3 pass per key;
# - client keys with braces (so the Redis hash tag is not zone:key) and
#   over 128 bytes: limits exact, the key on the primary of the slot Redis
#   computes, still no MOVED;
# - two zones whose keys are on different primaries in one location: when
#   one rejects, the other's count is not consumed (its X-RateLimit-
#   Remaining in a location limited by it alone, and its state in Redis),
#   sequentially and with 8 concurrent requests, whichever zone rejects;
#   none of their rejections from the deny cache;
# - ACL: with the default user given a password, username=/password= (ACL
#   user) and password= alone work (CLIENT LIST user=), a wrong password
#   and no password get the fail mode, the AUTH failure is logged, and
#   the seeds are not reconnected to faster than the backoff allows.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Cluster;
use RRL::Load;

my $t = RRL::Test->new;
my $c = RRL::Cluster->new($t, acl => ['rrl', 'rrl-secret']);
note(sprintf 'cluster of 6 nodes up in %.1f s', $c->{started_in});

my @P = $c->primaries;
is(scalar @P, 3, 'three primaries');
my %replicas = map { $_ => [$c->replicas_of($_)] } @P;
my @R = map { @{ $replicas{$_} } } @P;
is(scalar @R, 3, 'three replicas');

my $slot_map = $c->slot_map;
sub owner_of_slot {
    RRL::Cluster::owner_in($slot_map, $_[0]) // die "slot $_[0] has no owner";
}
sub owner_of_limit { owner_of_slot(RRL::Cluster::rrl_slot(@_)) }

# the helper's slot computation is Redis's (hash tags included)
my @sample = ('foo', 'rrl:{many:k1}:sw', 'rrl:{tag:a}b}:sw', 'rrl:{tag:}:sw',
    'rrl:{tag:{}:sw', 'rrl:{tag:{x}}:sw', 'x{}y{z}', '{a}}', '}{', '{}',
    'rrl:{za:x}:sw', "rrl:{tag:\xfe\xff}:sw");
is_deeply([map { RRL::Cluster::keyslot($_) } @sample],
    [map { scalar $c->cli($P[0], 'CLUSTER', 'KEYSLOT', $_) } @sample],
    'CRC16 slots of the helper agree with CLUSTER KEYSLOT');

# zones and keys on chosen primaries
my $ka = $c->key_on($P[0], 'za', 'a');
my $kb = $c->key_on($P[1], 'zb', 'b');
my $ka2 = $c->key_on($P[0], 'za', 'a', 1);
my $kb2 = $c->key_on($P[1], 'zb', 'b', 1);
my $kc = $c->key_on($P[2], 'zc', 'c');
my $kd = $c->key_on($P[0], 'zd', 'd');
my @probe = $c->probe_uris('key');

my $seed = $replicas{ $P[0] }[0];

my $conf = <<'EOF';
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%SEED%% cluster timeout=1s connect_timeout=1s;

    redis_ratelimit_zone $arg_key   zone=many  rate=3r/h;
    redis_ratelimit_zone $http_x_key zone=tag  rate=3r/h;
    redis_ratelimit_zone $arg_a     zone=za    rate=3r/h;
    redis_ratelimit_zone $arg_b     zone=zb    rate=10r/h;
    redis_ratelimit_zone $arg_c     zone=zc    rate=10r/h;
    redis_ratelimit_zone $arg_d     zone=zd    rate=3r/h;
    redis_ratelimit_zone $arg_key   zone=probe rate=1000000r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=many;
        }
        location /tag/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=tag;
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=za;
            redis_ratelimit zone=zb;
        }
        location /two2/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=zc;
            redis_ratelimit zone=zd;
        }
        location /b/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=zb;
        }
        location /c/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=zc;
        }
        location /probe/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=probe;
        }
    }
}
EOF
$conf =~ s/%%SEED%%/$seed/;

my $n = $t->start_nginx($conf);
my $port = $n->port;

ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 10),
    'limiting from the cluster, a replica as the only seed');

# connections: one per primary per worker, none to replicas once settled

sub named_counts {
    return join ' ', map { scalar $c->module_clients($_) } @P, @R;
}
{
    my $want = join ' ', (2) x 3, (0) x 3;
    my $deadline = time + 5;
    my $got = named_counts();
    while ($got ne $want && time < $deadline) {
        sleep 0.1;
        $got = named_counts();
    }
    is($got, $want, 'connections named nginx-redis-ratelimit: 2 workers x 1 '
        . 'on each primary, none on the replicas (primaries then replicas)');
}
ok(RRL::Load::wait_status($n, \@probe, 'PASSED', 5), 'every worker ready');

# 1,000 keys, five rounds, each round concurrent in batches of 200

$c->reset_stats;

my @keys = map { "k$_" } 0 .. 999;
my (%expect_on, %bad);
$expect_on{ owner_of_limit('many', $_) }++ for @keys;

for my $round (1 .. 5) {
    for (my $i = 0; $i < @keys; $i += 200) {
        my @batch = @keys[$i .. ($i + 199 < $#keys ? $i + 199 : $#keys)];
        my @r = $n->parallel(map { "/?key=$_" } @batch);
        for my $j (0 .. $#batch) {
            my $r = $r[$j];
            my $got = join ' ', $r->{status} // 'none',
                $r->{h}{'x-rl-status'} // 'none',
                $r->{h}{'x-ratelimit-remaining'} // '-',
                defined $r->{h}{'retry-after'} ? 'retry' : '-';
            my $want = $round <= 3 ? '200 PASSED ' . (3 - $round) . ' -'
                : '429 REJECTED 0 retry';
            $bad{"round $round: $got"}++ if $got ne $want;
        }
    }
}
is_deeply(\%bad, {}, '1,000 keys x 5 rounds: PASSED with remaining 2, 1, 0, '
    . 'then REJECTED twice with Retry-After, for every key');

my %on;
$on{$_} = scalar $c->rrl_keys($_, 'rrl:{many:*') for @P;
is_deeply(\%on, \%expect_on, 'rrl:{many:*} keys per primary: as their slots '
    . 'say (' . join(', ', map { "$_: $on{$_}" } @P) . ')');
ok(!(grep { ($on{$_} // 0) < 250 } @P), 'the keys are on all three primaries');
is(join(' ', map { scalar $c->rrl_keys($_, 'rrl:{many:*') } @R),
    join(' ', map { $on{$_} } @P), 'and on their replicas');

{
    my (%evalsha, %redirect);
    for my $p (@P) {
        $evalsha{$p} = $c->commandstats($p)->{evalsha} // 0;
        my $e = $c->errorstats($p);
        $redirect{$p} = ($e->{MOVED} // 0) + ($e->{ASK} // 0);
    }
    # round 5 is answered by the deny cache (round 4's rejections)
    is_deeply(\%evalsha, { map { $_ => 4 * $expect_on{$_} } @P },
        'one EVALSHA per request of rounds 1 to 4, on the primary of its slot');
    is_deeply(\%redirect, { map { $_ => 0 } @P }, 'no MOVED or ASK reply');
}

# the same key, concurrently

{
    my @uris = map { my $k = "c$_"; map { "/?key=$k" } 1 .. 6 } 0 .. 39;
    my @r = $n->parallel(@uris);
    my (%passed, %rem, %other);
    for my $i (0 .. $#r) {
        my ($k) = $uris[$i] =~ /key=(\w+)/;
        my $st = $r[$i]{h}{'x-rl-status'} // 'none';
        if ($st eq 'PASSED') {
            $passed{$k}++;
            push @{ $rem{$k} }, $r[$i]{h}{'x-ratelimit-remaining'} // '-';
        } elsif ($st ne 'REJECTED') {
            $other{$st}++;
        }
    }
    is_deeply(\%passed, { map { ("c$_" => 3) } 0 .. 39 },
        '40 keys, 6 concurrent requests each: exactly 3 pass per key');
    is_deeply({ map { $_ => join ' ', sort @{ $rem{$_} } } keys %rem },
        { map { ("c$_" => '0 1 2') } 0 .. 39 },
        'each pass of a key saw a distinct remaining');
    is_deeply(\%other, {}, 'no failure');
}

# keys with braces: the hash tag Redis sees is not always zone:key

{
    my @tagkeys = ('a}b', '}x', '{', '}', '{}', '{x}', 'x{y}z', '}{', '{{a}}',
        'a}}', 'q}' . ('r' x 20));
    my $long = '}' . ('L' x 199);
    my (%bad, @naive_differs);
    $c->reset_stats;

    for my $k (@tagkeys, $long) {
        my @got = map { my $r = $n->get('/tag/', headers => { 'X-Key' => $k });
            ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none')
        } 1 .. 4;
        $bad{$k} = "@got"
            if "@got" ne '200 PASSED 200 PASSED 200 PASSED 429 REJECTED';
        next if $k eq $long;
        my $rk = RRL::Cluster::rrl_key('tag', $k);
        my $owner = owner_of_slot(RRL::Cluster::keyslot($rk));
        push @naive_differs, $k
            if owner_of_slot(RRL::Cluster::crc16("tag:$k") & 16383) != $owner;
        my $e = $c->cli($owner, 'EXISTS', $rk);
        $bad{"$k: EXISTS on $owner"} = $e unless $e eq '1';
    }
    is_deeply(\%bad, {}, 'keys with braces and a 200-byte key: 3 PASSED then '
        . 'REJECTED, each key on the primary of the slot Redis computes');
    cmp_ok(scalar @naive_differs, '>=', 3, 'keys whose slot by hash tag is on '
        . 'another primary than the slot of "zone:key": ' . join(' ', @naive_differs));

    my @hashed = map { $c->rrl_keys($_, 'rrl:{tag:#*') } @P;
    is(scalar @hashed, 1, 'the 200-byte key is stored hashed, once');

    my %redirect = map { my $e = $c->errorstats($_);
        ($_ => ($e->{MOVED} // 0) + ($e->{ASK} // 0)) } @P;
    is_deeply(\%redirect, { map { $_ => 0 } @P },
        'keys with braces: no MOVED or ASK reply');
}

# two zones, two primaries: a rejection by one consumes nothing from the other

sub sw_count {
    my ($port, $key) = @_;
    my $v = $c->cli($port, 'GET', $key);
    return 0 if $v eq '';
    my (undef, $cur, $prev) = split /:/, $v;
    return ($cur // 0) + ($prev // 0);
}

sub seq { $n->outcomes(@_) }

is(owner_of_limit('za', $ka) . ' ' . owner_of_limit('zb', $kb),
    "$P[0] $P[1]", "za:$ka and zb:$kb on two primaries");

is(seq("/two/?a=$ka&b=$kb", 5), '200 PASSED 2, 200 PASSED 1, 200 PASSED 0, '
    . '429 REJECTED 0, 429 REJECTED 0',
    'two zones: the lowest remaining, rejected once za (3r/h) is spent');
sleep 0.2;    # a release may still be on its way
is(seq("/b/?b=$kb", 1), '200 PASSED 6',
    'zb (10r/h) consumed by the 3 passes only, not by the 2 rejections');
is(sw_count($P[1], RRL::Cluster::rrl_key('zb', $kb)), 4,
    'zb in Redis: 4 counted');
is(sw_count($P[0], RRL::Cluster::rrl_key('za', $ka)), 3,
    'za in Redis: 3 counted');

is(owner_of_limit('zc', $kc) . ' ' . owner_of_limit('zd', $kd),
    "$P[2] $P[0]", "zc:$kc and zd:$kd on two primaries");
is(seq("/two2/?c=$kc&d=$kd", 5), '200 PASSED 2, 200 PASSED 1, 200 PASSED 0, '
    . '429 REJECTED 0, 429 REJECTED 0',
    'two zones, the second one (zd 3r/h) rejecting');
sleep 0.2;
is(seq("/c/?c=$kc", 1), '200 PASSED 6', 'zc not consumed by the rejections');
is(sw_count($P[2], RRL::Cluster::rrl_key('zc', $kc)), 4, 'zc in Redis: 4 counted');

{
    my @r = $n->parallel(map { "/two/?a=$ka2&b=$kb2" } 1 .. 8);
    my $passed = grep { ($_->{h}{'x-rl-status'} // '') eq 'PASSED' } @r;
    my $rejected = grep { ($_->{h}{'x-rl-status'} // '') eq 'REJECTED' } @r;
    is("$passed $rejected", '3 5', 'two zones, 8 concurrent requests: 3 pass, '
        . '5 rejected');
    sleep 0.2;
    is(sw_count($P[1], RRL::Cluster::rrl_key('zb', $kb2)), 3,
        'concurrent: zb in Redis holds the 3 passes only (5 released)');
    is(seq("/b/?b=$kb2", 1), '200 PASSED 6', 'concurrent: zb remaining 6 after one more');
}

# reserve-then-release: a key may hold a reservation for a round trip
is(scalar $n->grep_log(qr/by zone "z[a-d]" \(cached\)/), 0,
    'zones limited together with others: none from the deny cache');

$n->stop;

# ACL: the default user gets a password; the ACL user (rrl) exists on
# every node since the start (the replicas' masteruser)

for my $p ($c->live_ports) {
    is($c->cli($p, 'ACL', 'SETUSER', 'default', 'resetpass', '>default-secret'),
        'OK', "node $p: the default user needs a password");
}

my $seeds = $c->seeds(@P);
my $acl_conf = <<'EOF';
worker_processes 2;

http {
    redis_ratelimit_server %%SEEDS%% cluster %%AUTH%% timeout=300ms connect_timeout=300ms;
    redis_ratelimit_zone $arg_key zone=acl rate=3r/h;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=acl;

        location / {
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
        }
    }
}
EOF

sub acl_nginx {
    my ($auth) = @_;
    (my $cf = $acl_conf) =~ s/%%SEEDS%%/$seeds/;
    $cf =~ s/%%AUTH%%/$auth/;
    return $t->start_nginx($cf);
}

# connections a node has accepted so far (this one included)
sub connections {
    my ($p) = @_;
    my ($n) = $c->cli($p, 'INFO', 'stats') =~ /total_connections_received:(\d+)/;
    return $n // 0;
}

sub users_on {
    my ($p) = @_;
    return join ' ', sort map { /\buser=(\S+)/ ? $1 : '?' } $c->module_clients($p);
}

{
    my $na = acl_nginx('username=rrl password=rrl-secret');
    my @k = map { $c->key_on($_, 'acl', 'u') } @P;
    ok(RRL::Load::wait_status($na, [map { "/?key=p$_" } 0 .. 5], 'PASSED', 10),
        'username= password=: limiting');
    for my $i (0 .. 2) {
        is(join(', ', map { my $r = $na->get("/?key=$k[$i]");
                ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none') } 1 .. 4),
            '200 PASSED, 200 PASSED, 200 PASSED, 429 REJECTED',
            "username= password=: a key on primary $P[$i]: 3 pass");
    }
    my $deadline = time + 5;
    sleep 0.1 while time < $deadline
        && join(',', map { users_on($_) } @P) ne join(',', ('rrl rrl') x 3);
    is(join(', ', map { users_on($_) } @P), join(', ', ('rrl rrl') x 3),
        'CLIENT LIST: the module connections are the ACL user\'s, 2 per primary');

    my $nd = acl_nginx('password=default-secret');
    ok(RRL::Load::wait_status($nd, [map { "/?key=$_" } @k], 'REJECTED', 10),
        'password= alone (the default user): limiting, the same counts');
    my $r = $nd->get("/?key=" . $c->key_on($P[1], 'acl', 'v'));
    is(($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none')
        . ' ' . ($r->{h}{'x-ratelimit-remaining'} // '-'), '200 PASSED 2',
        'password= alone: a fresh key passes');
    $deadline = time + 5;
    sleep 0.1 while time < $deadline
        && join(',', map { users_on($_) } @P) ne join(',', ('default default rrl rrl') x 3);
    is(join(', ', map { users_on($_) } @P),
        join(', ', ('default default rrl rrl') x 3),
        'CLIENT LIST: 2 connections of the default user per primary too');
}

for my $case (['username=rrl password=wrong', 'a wrong password'],
              ['', 'no password'])
{
    my ($auth, $name) = @$case;
    my %before = map { $_ => connections($_) } @P;
    my $start = time;
    my $nw = acl_nginx($auth);
    my %got;
    for my $i (1 .. 3) {
        for my $p (@P) {
            my $k = $c->key_on($p, 'acl', 'w');
            for my $loc ('/', '/closed/') {
                my $r = $nw->get("$loc?key=$k");
                $got{"$loc " . ($r->{status} // 'none') . ' '
                    . ($r->{h}{'x-rl-status'} // 'none')}++;
            }
        }
        sleep 0.2;
    }
    my $secs = time - $start;
    # each INFO below is one connection more
    my $made = 0;
    $made += connections($_) - $before{$_} - 1 for @P;
    is_deeply(\%got, { '/ 200 FAILED_OPEN' => 9, '/closed/ 429 FAILED_CLOSED' => 9 },
        "$name: the fail mode for keys on every primary");

    # the seeds are not hammered: each worker reconnects to each with its
    # backoff (50 ms doubling up to 500 ms, -25% jitter)
    my $cap = 3 * 2 * (6 + int(3 * $secs));
    cmp_ok($made, '<=', $cap, "$name: $made connections to the 3 seeds in "
        . sprintf('%.1f s by 2 workers (with the backoff: at most %d)', $secs, $cap));
    my $re = $auth ? qr/AUTH|WRONGPASS|invalid username-password/i
        : qr/NOAUTH|Authentication required/i;
    my @auth_lines = $nw->grep_log($re);
    ok(@auth_lines >= 1, "$name: error.log names the failure ($re)")
        or diag(join "\n", $nw->grep_log(qr/redis_ratelimit/));
    cmp_ok(scalar @auth_lines, '<=', 2 * (int($secs) + 2) + 2, "$name: logged "
        . scalar(@auth_lines) . ' times for 18 requests over '
        . sprintf('%.1f', $secs) . ' s by 2 workers, not once per request')
        if $auth;
    $nw->stop;
}

$t->done_testing;
