#!/usr/bin/perl

# Leases ahead (issue 27): a key whose lease runs in the second half of
# its window (fixed_window, sliding_window, windows of a day at most)
# takes the next window's lease before that window starts, so that its
# first requests there are decided from it, not after Redis. One nginx of
# two workers, a key asked every 100 ms across windows of 2 s:
# - the calls ahead are renewals whose cost field is "0:W:0:0:1", with W
#   at most the largest lease (20% of 100);
# - late in a window, Redis holds the units taken ahead for the next one
#   at "<the state's key>:ahead", "<the next window>:<units>";
# - after the key's first request, every request is decided from a lease
#   but for one at most (a window's first request may come before the
#   lease ahead is known to have started here);
# - none is asked for a window of 2 days, nor for token_bucket.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Monitor;
use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s;
    redis_ratelimit_zone $arg_k zone=fwa rate=100r/2s algorithm=fixed_window lease=20%;
    redis_ratelimit_zone $arg_k zone=swa rate=100r/2s algorithm=sliding_window lease=20%;
    redis_ratelimit_zone $arg_k zone=days rate=100r/2d algorithm=fixed_window lease=20%;
    redis_ratelimit_zone $arg_k zone=tb rate=50r/s algorithm=token_bucket burst=100 lease=20%;

    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }

        location /fwa/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=fwa; }
        location /swa/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=swa; }
        location /days/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=days; }
        location /tb/ { alias %%TESTDIR%%/html/; redis_ratelimit zone=tb; }
    }
}
EOF

sub from {
    map { $_ // 0 } $n->zone_metrics('lease_requests_total', $_[0], 'from',
        qw(lease redis));
}

my $ahead_field = qr/"(0:\d+:0:0:1)"/;

# A request of key a every 100 ms for `seconds`, from the start of a
# window of 2 s; the statuses, and the ahead key's value seen late in a
# window (undef when never looked at).
sub steady {
    my ($zone, $seconds, $ahead_key) = @_;
    $t->wait_window(2, 1.9);
    my (@st, $ahead);
    my $end = time + $seconds;
    while (time < $end) {
        my $at = $t->redis_time;
        my $r = $n->get("/$zone/index.html?k=a");
        push @st, $r->{status} // 0;
        my $into = $at - int($at / 2) * 2;
        if ($ahead_key && !defined $ahead && $into > 1.6 && $into < 1.9
            && @st > 10)
        {
            $ahead = { value => scalar $t->redis('GET', $ahead_key),
                next => int($at / 2) + 1 };
        }
        sleep 0.1;
    }
    return (\@st, $ahead);
}

for my $case (['fwa', 'fw'], ['swa', 'sw']) {
    my ($zone, $short) = @$case;
    my $key = "rrl:{$zone:a}:$short";
    my $mon = RRL::Monitor->start($t);
    my ($st, $ahead) = steady($zone, 5.2, "$key:ahead");
    my @fields = $mon->stop($ahead_field);

    is(scalar(grep { $_ != 200 } @$st), 0, "$zone: every request passes (" . @$st . ')');
    cmp_ok(scalar @fields, '>=', 2, "$zone: renewals ahead asked (@fields)");
    is(scalar(grep { (split /:/)[1] > 20 } @fields), 0,
        "$zone: none for more than the largest lease");
    ok($ahead, "$zone: the ahead key looked at late in a window");
    like($ahead->{value} // '', qr/^\Q$ahead->{next}\E:([1-9]\d*)$/,
        "$zone: $key:ahead holds the next window's units ("
        . ($ahead->{value} // 'none') . ", next window $ahead->{next})") if $ahead;

    my ($lease, $redis) = from($zone);
    cmp_ok($redis, '<=', 2, "$zone: after the first request, one at most waited "
        . "on Redis ($redis of " . ($lease + $redis) . ')');
    is($lease + $redis, scalar @$st, "$zone: every request counted once");
}

# none ahead for a window longer than a day, nor for token_bucket
for my $zone ('days', 'tb') {
    my $mon = RRL::Monitor->start($t);
    my ($st) = steady($zone, 2.2);
    my @fields = $mon->stop($ahead_field);
    is(scalar(grep { $_ != 200 } @$st), 0, "$zone: every request passes");
    is("@fields", '', "$zone: no lease asked for ahead");
}
is(scalar $t->redis('EXISTS', 'rrl:{days:a}:fw:ahead'), 0,
    'days: no ahead key in Redis');

$t->done_testing;
