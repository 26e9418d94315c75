#!/usr/bin/perl

# sliding_log: at most N in any trailing PERIOD, no reset at window
# boundaries, Retry-After honoured (a client that sleeps exactly Retry-After
# seconds passes), X-RateLimit-Reset, the Redis sorted set.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=sl rate=2r/2s algorithm=sliding_log;
    redis_ratelimit_zone $arg_key zone=sl3 rate=3r/2s algorithm=sliding_log;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;

        location / {
            redis_ratelimit zone=sl;
        }
        location /three/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sl3;
        }
    }
}
EOF

# one request, with the Redis time before and after it
sub req {
    my ($uri) = @_;
    my $t0 = $t->redis_time;
    my $r = $n->get($uri);
    $r->{t0} = $t0;
    $r->{t1} = $t->redis_time;
    return $r;
}

sub between {
    my ($v, $lo, $hi, $name) = @_;
    ok(defined $v && $v >= $lo && $v <= $hi, $name)
        or diag("got " . ($v // 'undef') . ", expected $lo .. $hi");
}

# 0.0: r1 passes; 0.8: r2 passes, r3 is rejected

my $r1 = req('/?key=k');
is($r1->{status}, 200, 'r1: 200');
is($r1->{h}{'x-ratelimit-limit'}, 2, 'r1: Limit 2');
is($r1->{h}{'x-ratelimit-remaining'}, 1, 'r1: Remaining 1');
between($r1->{h}{'x-ratelimit-reset'}, ceil($r1->{t0} + 2), ceil($r1->{t1} + 2),
    'r1: Reset is now + period');

sleep 0.8;

my $r2 = req('/?key=k');
is($r2->{status}, 200, 'r2: 200');
is($r2->{h}{'x-ratelimit-remaining'}, 0, 'r2: Remaining 0');

my $r3 = req('/?key=k');
is($r3->{status}, 429, 'r3: 429');
is($r3->{h}{'x-ratelimit-remaining'}, 0, 'r3: Remaining 0');
# r1 leaves the log 2 s after it passed
between($r3->{h}{'retry-after'}, ceil($r1->{t0} + 2 - $r3->{t1}),
    ceil($r1->{t1} + 2 - $r3->{t0}), 'r3: Retry-After until r1 leaves');
# usage is back to zero when r2 leaves
between($r3->{h}{'x-ratelimit-reset'}, ceil($r2->{t0} + 2), ceil($r2->{t1} + 2),
    'r3: Reset when the newest entry leaves');

is($t->redis('ZCARD', 'rrl:{sl:k}:sl'), 2, 'Redis: two entries in the log');

# 1.3: still rejected (a fixed window could have started afresh)

sleep 0.5;

my $r4 = req('/?key=k');
is($r4->{status}, 429, 'r4, 1.3 s after r1: still 429');
my $ra = $r4->{h}{'retry-after'} // 0;
between($ra, ceil($r1->{t0} + 2 - $r4->{t1}), ceil($r1->{t1} + 2 - $r4->{t0}),
    'r4: Retry-After until r1 leaves');
cmp_ok($ra, '>=', 1, 'r4: Retry-After at least 1');

# sleep exactly Retry-After: passes

sleep $ra;

my $r5 = req('/?key=k');
is($r5->{status}, 200, "r5, after sleeping Retry-After ($ra s): 200");
is($r5->{h}{'x-ratelimit-remaining'}, 0, 'r5: Remaining 0 (r2 still in the log)');

my $r6 = req('/?key=k');
is($r6->{status}, 429, 'r6: 429');
$ra = $r6->{h}{'retry-after'} // 0;
between($ra, ceil($r2->{t0} + 2 - $r6->{t1}), ceil($r2->{t1} + 2 - $r6->{t0}),
    'r6: Retry-After until r2 leaves');

sleep $ra;

my $r7 = req('/?key=k');
is($r7->{status}, 200, "r7, after sleeping Retry-After ($ra s): 200");

is($t->redis('ZCARD', 'rrl:{sl:k}:sl'), 2, 'Redis: pruned to two entries');
my $pttl = $t->redis('PTTL', 'rrl:{sl:k}:sl');
ok($pttl > 0 && $pttl <= 2000, "Redis: the log expires within the period ($pttl ms)");

# r4 may be the deny cache's, after r3's rejection from Redis
my @rejected = $n->grep_log(qr/limiting requests by zone "sl"(?: \(cached\))?, key "k", rate 2r\/2s, retry after \d+s/);
is(scalar @rejected, 3, 'three rejections logged');

# hammering for 3 s: at most 3 passes in any trailing 2 s, exactly 6 in all

my @passed;    # [sent, received] (client clock = Redis clock, same host)
my $start = time;

while (time - $start < 3) {
    my $sent = time;
    my $r = $n->get('/three/?key=h');
    push @passed, [$sent, time] if ($r->{status} // 0) == 200;
    sleep 0.05;
}

is(scalar @passed, 6, '3r/2s over 3 s: exactly 6 passed');

my @short;
for my $i (0 .. $#passed - 3) {
    # the (i+3)-th pass happened at least 2 s after the i-th
    my $gap = $passed[$i + 3][1] - $passed[$i][0];
    push @short, sprintf('%d->%d: %.3f s', $i, $i + 3, $gap) if $gap < 2;
}
ok(!@short, 'never 4 passes within 2 s') or diag("@short");

my $gap = @passed >= 4 ? $passed[3][1] - $passed[2][0] : 0;
ok($gap >= 1.5, sprintf('the 4th pass waited for the 1st to leave (%.2f s)', $gap));

$t->done_testing;
