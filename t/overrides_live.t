#!/usr/bin/perl

# Live overrides across two nginx servers sharing one Redis (the deny
# cache off, so that every request is Redis's decision): an override set,
# changed and deleted between requests applies from the next request on,
# on either server, with no reload; and under concurrent traffic from both
# servers: unlimited lets everything through and counts nothing, block
# rejects every request sent after it was set, and once it is deleted the
# zone's rate lets exactly its N through in all. With Redis down, fail
# local knows no overrides: an unlimited key gets the zone's limit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::Load;

my $t = RRL::Test->new;
$t->start_redis;

my $conf = <<'EOF';
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_deny_cache off;
    redis_ratelimit_zone $arg_key zone=live rate=3r/h algorithm=fixed_window overrides=on;

    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=live;

        location / {
        }
        location /local/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail local;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF

my @n = ($t->start_nginx($conf), $t->start_nginx($conf));

my $wend = $t->wait_window(3600, 60);
my $w = $wend / 3600 - 1;

my $LK = 'rrl:{live:k}:limit';
my $seq = 0;

# the next request, on servers A and B in turn
sub next_get {
    my ($key) = @_;
    my $s = $seq++ % 2;
    my $r = $n[$s]->get("/?key=$key");
    $r->{server} = $s ? 'B' : 'A';
    return $r;
}

# "status Limit Remaining" of a response
sub brief {
    my ($r) = @_;
    return join ' ', $r->{status}, $r->{h}{'x-ratelimit-limit'} // '-',
        $r->{h}{'x-ratelimit-remaining'} // '-';
}

sub steps {
    my ($name, $key, @expect) = @_;
    my @got;
    for (@expect) {
        my $r = next_get($key);
        push @got, "$r->{server}: " . brief($r);
    }
    my @want = map { (($seq - @expect + $_) % 2 ? 'B' : 'A') . ": $expect[$_]" }
        0 .. $#expect;
    is_deeply(\@got, \@want, $name);
}

# no override: the zone's 3r/h
steps('no override: 3r/h', 'k', '200 3 2', '200 3 1', '200 3 0', '429 3 0');

# set: from the next request on, on either server
is($t->redis('SET', $LK, '6r/h'), 'OK', 'override set to 6r/h');
steps('set 6r/h: 3 more pass', 'k', '200 6 2', '200 6 1', '200 6 0', '429 6 0');
is($t->redis('GET', 'rrl:{live:k}:fw'), "$w:6", '6 counted in the window');

# changed: lower than what was counted
$t->redis('SET', $LK, '4r/h');
steps('changed to 4r/h: rejected at once', 'k', '429 4 0', '429 4 0');

# changed: unlimited
$t->redis('SET', $LK, 'unlimited');
steps('changed to unlimited: all pass, no headers', 'k', ('200 - -') x 6);
is($t->redis('GET', 'rrl:{live:k}:fw'), "$w:6", 'unlimited: nothing counted');

# changed: block, Retry-After the zone's period
$t->redis('SET', $LK, 'block');
steps('changed to block', 'k', '429 0 0', '429 0 0');
my $r = next_get('k');
is($r->{h}{'retry-after'}, 3600, 'block: Retry-After the zone\'s period');

# changed: a higher rate
$t->redis('SET', $LK, '8r/h burst=1');
steps('changed to 8r/h burst=1', 'k', '200 9 2', '200 9 1', '200 9 0', '429 9 0');

# deleted: the zone's rate again
is($t->redis('DEL', $LK), 1, 'override deleted');
steps('deleted: the zone\'s 3r/h', 'k', '429 3 0', '429 3 0');
is($t->redis('GET', 'rrl:{live:k}:fw'), "$w:9", '9 counted in the window');

# a new key: set, deleted, with a TTL
$t->redis('SET', 'rrl:{live:k2}:limit', '5r/h', 'PX', 1500);
steps('a TTL: the override', 'k2', '200 5 4', '200 5 3', '200 5 2', '200 5 1');
sleep 0.1 while $t->redis('EXISTS', 'rrl:{live:k2}:limit');
steps('the TTL ended: the zone\'s 3r/h', 'k2', '429 3 0', '429 3 0');

###########################################################################
# concurrent traffic from both servers

$t->redis('SET', 'rrl:{live:c}:limit', 'unlimited');
my @uris = ('/?key=c') x 3;
my @load = map { RRL::Load->start($t, $_->port, \@uris, interval => 0.02) } @n;
$_->wait_rounds(10) for @load;
my $t_block0 = time;
$t->redis('SET', 'rrl:{live:c}:limit', 'block');
my $t_block = time;
my $mark = $load[0]->rounds_done + 10;
$load[0]->wait_rounds($mark);
$load[1]->wait_rounds($load[1]->rounds_done + 10);
my $t_del0 = time;
$t->redis('DEL', 'rrl:{live:c}:limit');
my $t_del = time;
$load[0]->wait_rounds($load[0]->rounds_done + 10);
$load[1]->wait_rounds($load[1]->rounds_done + 10);
my @rec = map { $_->stop } @load;

# before block: every request passed (unlimited from its first read on)
my @early = grep { $_->{end} < $t_block0 } @rec;
cmp_ok(scalar @early, '>=', 50, 'unlimited: requests from both servers');
is(RRL::Load::tally(map { $_->{status} } @early), '200 x' . @early,
    'unlimited: all passed');

# sent after block was set, ended before it was deleted: all rejected
my @blocked = grep { $_->{start} > $t_block && $_->{end} < $t_del0 } @rec;
cmp_ok(scalar @blocked, '>=', 30, 'block: requests from both servers');
is(RRL::Load::tally(map { "$_->{status} $_->{rl}" } @blocked),
    '429 REJECTED x' . @blocked, 'block: every one rejected');

# from block on, nothing counted; after the delete, exactly 3 pass in all
my @late = grep { $_->{end} >= $t_block0 } @rec;
my @after = grep { $_->{start} > $t_del } @rec;
cmp_ok(scalar @after, '>=', 30, 'deleted: requests from both servers');
my $passed_late = grep { $_->{status} eq '200' } @late;
my $passed_unsure = grep { $_->{status} eq '200' && $_->{start} < $t_block } @late;
ok($passed_late - $passed_unsure == 3,
    'deleted: exactly the zone\'s 3 passed, across both servers')
    or diag(RRL::Load::tally(map { "$_->{status} $_->{rl}" } @late));
is(scalar(grep { $_->{status} eq '200' && $_->{start} > $t_block && $_->{end} < $t_del0 } @late),
    0, 'none passed while blocked');
is($t->redis('GET', 'rrl:{live:c}:fw'), "$w:3", 'Redis counted only the 3');

###########################################################################
# fail local: the zone's own limit, whatever the override

$t->redis('SET', 'rrl:{live:loc}:limit', 'unlimited');
my @st = map { brief($n[0]->get('/local/?key=loc')) } 1 .. 5;
is("@st", join(' ', ('200 - -') x 5), 'fail local, Redis up: unlimited');
$t->stop_redis;
@st = map { my $r = $n[0]->get('/local/?key=loc');
    brief($r) . ' ' . ($r->{h}{'x-rl-status'} // '-') } 1 .. 4;
is("@st", '200 3 2 FAILED_LOCAL 200 3 1 FAILED_LOCAL 200 3 0 FAILED_LOCAL 429 3 0 FAILED_LOCAL',
    'fail local, Redis down: the zone\'s 3r/h, not the override');

$t->done_testing;
