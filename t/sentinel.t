#!/usr/bin/perl

# Redis under Sentinel (RRL::Sentinel: a primary, a replica, three
# Sentinels with requirepass, down-after-milliseconds 1000; the data nodes
# require a password and have an ACL user), nginx with two workers and
# `sentinel=mymaster username= password= sentinel_password= db=2`:
# - limits exact on the primary the Sentinels name (3 PASSED, then
#   REJECTED), the key in db 2 of that primary; its connections (2, one per
#   worker) are the ACL user's, on db 2, none on the replica;
# - kill -9 of the primary during traffic (fail open and fail closed 503
#   locations): clients see only 200 PASSED, 200 FAILED_OPEN or 503
#   FAILED_CLOSED; after the Sentinels' switch, limiting resumes from the
#   new primary (PASSED for good within 10 s of the kill, keys written
#   there, a key spent before the kill still spent: replicated state);
#   printed: kill -> switch, kill -> first PASSED, switch -> first PASSED;
# - the old primary back as a replica, then a planned SENTINEL FAILOVER
#   back to it, under traffic: same statuses only; within 3 s of the
#   Sentinels' switch, requests are counted on the primary they name (the
#   demoted primary stays up and stays a primary for some 10 s, until the
#   Sentinels convert it; what is counted there meanwhile is dropped when
#   it resyncs); then exact there;
# - a wrong sentinel_password, a missing one, or a wrong data password:
#   the fail mode, no alert.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Sentinel;
use RRL::Load;

my $RECOVER_MAX = 10;

my $t = RRL::Test->new;
my $s = RRL::Sentinel->new($t, name => 'mymaster',
    user => ['rrl', 'rrl-secret'], password => 'default-secret',
    sentinel_password => 'sentinel-secret');
note(sprintf 'primary, replica and 3 Sentinels up in %.1f s', $s->{started_in});

my $seeds = $s->seeds;
my $conf = <<'EOF';
worker_processes 2;

http {
    redis_ratelimit_server %%SEEDS%% sentinel=mymaster %%AUTH%% db=2
                           timeout=1s connect_timeout=1s;
    redis_ratelimit_zone $arg_key zone=st rate=3r/h;
    redis_ratelimit_zone $arg_key zone=big rate=100000r/d;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location / {
            redis_ratelimit zone=st;
        }
        location /open/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=big;
        }
        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=big;
            redis_ratelimit_fail closed;
            redis_ratelimit_status 503;
        }
    }
}
EOF

sub nginx_with {
    my ($auth) = @_;
    (my $cf = $conf) =~ s/%%SEEDS%%/$seeds/;
    $cf =~ s/%%AUTH%%/$auth/;
    return $t->start_nginx($cf);
}

my $AUTH = 'username=rrl password=rrl-secret sentinel_password=sentinel-secret';
my $n = nginx_with($AUTH);

ok(RRL::Load::wait_status($n, ['/open/?key=probe'], 'PASSED', 10),
    'limiting through the Sentinels');

sub seq { $n->outcomes(@_) }

my $EXACT = '200 PASSED 2, 200 PASSED 1, 200 PASSED 0, 429 REJECTED 0';

sub in_db {
    my ($port, $db, $key) = @_;
    return scalar $s->cli_db($port, $db, 'EXISTS', $key);
}

sub module_clients {
    my ($port) = @_;
    return grep { /\bname=nginx-redis-ratelimit\b/ } $s->cli($port, 'CLIENT', 'LIST');
}

sub wait_clients {
    my ($port, $want) = @_;
    my $deadline = time + 5;
    my @c = module_clients($port);
    while (@c != $want && time < $deadline) {
        sleep 0.05;
        @c = module_clients($port);
    }
    return join ', ', sort map { my ($u) = /\buser=(\S+)/; my ($db) = /\bdb=(\d+)/;
        ($u // '?') . ' db=' . ($db // '?') } @c;
}

my $p1 = $s->primary;
my $r1 = $s->replica;

is(seq('/?key=a', 4), $EXACT, 'key a: 3 pass, then rejected');
is(in_db($p1, 2, 'rrl:{st:a}:sw') . in_db($p1, 0, 'rrl:{st:a}:sw'), '10',
    "key a: in db 2 of the primary ($p1), not in db 0");
is(wait_clients($p1, 2), 'rrl db=2, rrl db=2',
    'the primary: two module connections, the ACL user\'s, on db 2');
is(scalar(module_clients($r1)), 0, 'the replica: none');

{
    my $deadline = time + 5;
    sleep 0.02 while time < $deadline && in_db($r1, 2, 'rrl:{st:a}:sw') ne '1';
    is(in_db($r1, 2, 'rrl:{st:a}:sw'), '1', 'key a replicated');
}

# statuses allowed while a primary is missing
sub check_statuses {
    my ($name, @rec) = @_;
    my @bad = grep { my $ok = $_->{uri} =~ m{^/open/}
            ? ($_->{status} eq '200' && $_->{rl} =~ /^(PASSED|FAILED_OPEN)$/)
            : ($_->{status} eq '200' && $_->{rl} eq 'PASSED')
              || ($_->{status} eq '503' && $_->{rl} eq 'FAILED_CLOSED');
        !$ok } @rec;
    is(scalar @bad, 0, "$name: " . scalar(@rec) . ' requests: 200 PASSED or '
        . 'FAILED_OPEN (fail open), 200 PASSED or 503 FAILED_CLOSED (fail '
        . 'closed), nothing else')
        or diag(RRL::Load::tally(map { "$_->{uri} $_->{status} $_->{rl}" } @bad));
}

# runs the client through $event->(); returns (records, event time)
sub under_load {
    my ($prefix, $event) = @_;
    my @uris = map { ("/open/?key=$prefix$_", "/closed/?key=$prefix$_") } 1 .. 4;
    my $load = RRL::Load->start($t, $n->port, \@uris, interval => 0.03,
        timeout => 15);
    $load->wait_rounds(10);
    my $at = $event->();
    # until PASSED for 2 s after the last failure, at most RECOVER_MAX + 2 s
    my $deadline = $at + $RECOVER_MAX + 2;
    while (time < $deadline) {
        my @r = grep { $_->{end} > $at } $load->records;
        my ($last_bad) = reverse grep { $_->{rl} ne 'PASSED' } @r;
        last if @r && $r[-1]{rl} eq 'PASSED'
            && $r[-1]{end} - ($last_bad ? $last_bad->{end} : $at) > 2;
        sleep 0.1;
    }
    return ([$load->stop], $at);
}

sub recovery {
    my ($name, $rec, $at, $switch) = @_;
    my @after = grep { $_->{end} > $at } @$rec;
    my ($first) = grep { $_->{start} > $at && $_->{rl} eq 'PASSED' } @after;
    my ($last_bad) = reverse grep { $_->{rl} ne 'PASSED' } @after;
    my $good = $last_bad
        ? (grep { $_->{end} > $last_bad->{end} && $_->{rl} eq 'PASSED' } @after)[0]
        : $first;
    note("$name: after the event: " . RRL::Load::tally(map {
        ($_->{uri} =~ m{^/(\w+)/})[0] . " $_->{status} $_->{rl}" } @after));
    ok($good && $good->{end} - $at <= $RECOVER_MAX, sprintf(
        '%s: PASSED again for good %s after it (<= %d s)', $name,
        $good ? sprintf('%.3f s', $good->{end} - $at) : 'never', $RECOVER_MAX));
    note(sprintf '%s: -> switch %s, -> first PASSED %s, switch -> first PASSED %s',
        $name, map { defined $_ ? sprintf('%.3f s', $_) : 'never' }
        ($switch ? $switch - $at : undef),
        ($first ? $first->{end} - $at : undef),
        ($first && $switch ? $first->{end} - $switch : undef));
}

# kill -9 of the primary

my $switch;
my ($rec, $kill) = under_load('k', sub {
    my ($at) = $s->kill_primary;
    # the switch is polled in the background of the wait for recovery
    my $pid = fork // die "fork: $!";
    if ($pid == 0) {
        my ($first) = $s->wait_switch($p1, 15);
        open my $fh, '>', $t->testdir . '/switch.txt';
        print $fh $first // '';
        close $fh;
        POSIX::_exit(0);
    }
    $s->{switch_pid} = $pid;
    return $at;
});
waitpid($s->{switch_pid}, 0);
$switch = RRL::Test::read_file($t->testdir . '/switch.txt') || undef;

my $p2 = $s->primary;
is($p2, $r1, "the Sentinels switched to the replica ($r1)");
is(scalar(() = $s->switch_lines), 3, '+switch-master in the 3 Sentinels\' logs');
check_statuses('kill -9', @$rec);
recovery('kill -9', $rec, $kill, $switch);

is(seq('/?key=a', 1), '429 REJECTED 0', 'key a, spent before the kill: still spent');
is(seq('/?key=b', 4), $EXACT, 'key b, on the new primary: 3 pass, then rejected');
is(in_db($p2, 2, 'rrl:{st:b}:sw'), '1', 'key b: in db 2 of the new primary');
is(wait_clients($p2, 2), 'rrl db=2, rrl db=2',
    'the new primary: two module connections, the ACL user\'s, on db 2');

# the old primary back (as a replica), then a planned failover to it: the
# demoted primary stays up, and stays a primary until the Sentinels convert
# it into a replica (some 10 s later: Redis Sentinel waits 8 s before it
# converts a node that still says it is a primary); whatever is written to
# it meanwhile is dropped when it resyncs from the new primary. The limits
# must follow the Sentinels' switch, not that conversion.

$s->restart($p1);
ok($s->wait_ready(20), "the old primary ($p1) back as a replica");

my $f_switch;
($rec, my $f_at) = under_load('f', sub {
    my $at = time;
    $s->failover(15);
    $f_switch = time;
    return $at;
});
is($s->primary, $p1, "SENTINEL FAILOVER: $p1 is the primary again");
note("SENTINEL FAILOVER: the Sentinels switched in " . sprintf('%.3f s', $f_switch - $f_at)
    . "; $p2 says it is a " . $s->role($p2));
check_statuses('SENTINEL FAILOVER', @$rec);

# where a fresh key is counted, every 100 ms after the switch
{
    my ($on_new, $demoted, %where);
    my $deadline = $f_switch + 15;
    my $i = 0;
    while (time < $deadline) {
        my $k = 'x' . $i++;
        my $r = $n->get("/?key=$k");
        my $at = time;
        my $new = in_db($p1, 2, "rrl:{st:$k}:sw");
        my $old = in_db($p2, 2, "rrl:{st:$k}:sw");
        $where{"$new$old"}++;
        $demoted //= $at if $s->role($p2) eq 'slave';
        if ($new eq '1' && ($r->{h}{'x-rl-status'} // '') eq 'PASSED') {
            $on_new = $at;
            last;
        }
        sleep 0.1;
    }
    note(sprintf 'SENTINEL FAILOVER: fresh keys counted on the old primary only: %d, '
        . 'on the new one: %d; %s demoted %s after the switch', $where{'01'} // 0,
        ($where{'10'} // 0) + ($where{'11'} // 0), $p2,
        defined $demoted ? sprintf('%.1f s', $demoted - $f_switch) : 'not yet');
    ok(defined $on_new && $on_new - $f_switch <= 3, sprintf('SENTINEL FAILOVER: '
        . 'requests counted on the primary the Sentinels name %s after their '
        . 'switch (<= 3 s)', defined $on_new ? sprintf('%.1f s', $on_new - $f_switch)
        : 'not within 15 s'));
}

is(seq('/?key=c', 4), $EXACT, 'key c, after the planned failover: 3 pass, then rejected');
is(in_db($p1, 2, 'rrl:{st:c}:sw'), '1', 'key c: on the primary the Sentinels name');
is(seq('/?key=b', 1), '429 REJECTED 0', 'key b: still spent');

$n->stop;

# wrong credentials: the fail mode

for my $case (
    ['username=rrl password=rrl-secret sentinel_password=wrong', 'a wrong sentinel_password'],
    ['username=rrl password=rrl-secret', 'no sentinel_password'],
    ['username=rrl password=wrong sentinel_password=sentinel-secret', 'a wrong password'])
{
    my ($auth, $name) = @$case;
    my $nw = nginx_with($auth);
    my %got;
    for my $i (1 .. 4) {
        for my $loc ('/open/', '/closed/') {
            my $r = $nw->get("$loc?key=w$i");
            $got{"$loc " . ($r->{status} // 'none') . ' '
                . ($r->{h}{'x-rl-status'} // 'none')}++;
        }
        sleep 0.2;
    }
    is_deeply(\%got, { '/open/ 200 FAILED_OPEN' => 4, '/closed/ 503 FAILED_CLOSED' => 4 },
        "$name: the fail mode");
    my @l = $nw->grep_log(qr/\[error\].*redis_ratelimit/);
    ok(@l >= 1, "$name: logged") and note("$name: $l[0]");
}

$t->done_testing;
