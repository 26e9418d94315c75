#!/usr/bin/perl

# Every state and every wait stays within what the module's decoder takes,
# whatever a settlement, an override or a cost does (issue 25), with the
# issue's own configurations:
# - a settled debt of 10^11 tokens on token_bucket 100000r/h (and 36 MB of
#   $bytes_sent on 1000r/d) rejects the key with an exact Retry-After (the
#   debt held as one of 100 years), counted settled, never FAILED_OPEN;
# - an override at the bounds (1000000000r/1ms burst=1000000000) passes on
#   every algorithm, with no "unexpected script reply";
# - a leaky_bucket override deleted: the zone's rate applies at once;
# - a settle value over 10^12 is logged as over the maximum;
# - R1: a settlement applies the limit its charge applied, whatever the
#   override is when it settles (the response sent slowly, the override
#   changed meanwhile).
# The upstream is a second server of the same nginx: X-Usage-Total-Tokens
# from ?usage=N.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

# a file of 36,500,000 bytes: 1000r/d repays 36.5 MB in just over 100 years
$t->write_file('html/big', 'x' x 36_500_000);
$t->write_file('html/index.html', "ok\n");
$t->write_file('html/slow', 'x' x 300_000);

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_deny_cache off;
    redis_ratelimit_zone $http_authorization zone=tokens rate=100000r/h algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=bytes rate=1000r/d algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=lb rate=10r/s burst=5 algorithm=leaky_bucket overrides=on;
    redis_ratelimit_zone $arg_key zone=otb rate=10r/s algorithm=token_bucket overrides=on;
    redis_ratelimit_zone $arg_key zone=ofw rate=10r/s algorithm=fixed_window overrides=on;
    redis_ratelimit_zone $arg_key zone=osw rate=10r/s algorithm=sliding_window overrides=on;
    redis_ratelimit_zone $arg_key zone=osl rate=10r/s algorithm=sliding_log overrides=on;
    redis_ratelimit_zone $arg_key zone=r1 rate=200r/h algorithm=fixed_window overrides=on;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /v1/chat/completions {
            redis_ratelimit zone=tokens cost=2000 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%PORT_1%%/up;
        }
        location = /big {
            redis_ratelimit zone=bytes settle=$bytes_sent;
        }
        location /lb/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=lb;
        }
        location /o/lb/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=lb;
        }
        location /o/otb/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=otb;
        }
        location /o/ofw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=ofw;
        }
        location /o/osw/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=osw;
        }
        location /o/osl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=osl;
        }
        location = /slow {
            redis_ratelimit zone=r1 cost=10 settle=$arg_usage;
            limit_rate 300k;
        }
        location = /metrics {
            redis_ratelimit_metrics;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;

        location /up {
            add_header X-Usage-Total-Tokens $arg_usage;
            return 200 "OK\n";
        }
    }
}
EOF

my $YEARS_100 = 100 * 365 * 86400;

# the settlements counted for a zone once they are in (in the background)
sub settled {
    my ($zone, $want) = @_;
    my $v;
    for (1 .. 100) {
        ($v) = $n->zone_metrics('settlements_total', $zone, 'result', 'settled');
        $v //= 0;
        return $v if $v >= $want;
        sleep 0.05;
    }
    return $v;
}

# item 1: 100000r/h, cost 2000, an upstream reporting 10^11 tokens once

my $r = $n->get('/v1/chat/completions?usage=100000000000',
    headers => { Authorization => 'Bearer k1' });
is($r->{status}, 200, 'debt 10^11: the request passed');
is(settled('tokens', 1), 1, 'debt 10^11: counted settled');
$r = $n->get('/v1/chat/completions?usage=10', headers => { Authorization => 'Bearer k1' });
is($r->{status}, 429, 'debt 10^11: the next request rejected');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'debt 10^11: REJECTED, not FAILED_OPEN');
# the debt held: a full bucket in 100 years, so 2000 tokens in 100 years
# less 98000 tokens at 36 ms each
my $ra = $r->{h}{'retry-after'} // 0;
ok($ra > $YEARS_100 - 3528 - 10 && $ra <= $YEARS_100 - 3528,
    "debt 10^11: Retry-After of the debt held, 100 years less 3528 s ($ra)");
my $ttl = $t->redis('PTTL', 'rrl:{tokens:Bearer k1}:tb');
ok($ttl > 0 && $ttl <= $YEARS_100 * 1000, "debt 10^11: the state kept at most 100 years ($ttl ms)");

# item 1: 1000r/d, settle=$bytes_sent of 36.5 MB

$r = $n->get('/big?key=b');
is($r->{status}, 200, 'bytes: the large response passed');
is(length($r->{body} // ''), 36_500_000, 'bytes: all of it');
is(settled('bytes', 1), 1, 'bytes: counted settled');
$r = $n->get('/big?key=b');
is($r->{status}, 429, 'bytes: the next request rejected');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'bytes: REJECTED, not FAILED_OPEN');
# 1 token in 100 years less 999 tokens at 86.4 s each
$ra = $r->{h}{'retry-after'} // 0;
ok($ra > $YEARS_100 - 86314 - 10 && $ra <= $YEARS_100 - 86313,
    "bytes: Retry-After 100 years less 86313.6 s ($ra)");

# item 8: a value over 10^12 is said to be over the maximum

$r = $n->get('/v1/chat/completions?usage=1000000000001',
    headers => { Authorization => 'Bearer k8' });
is($r->{status}, 200, 'over 10^12: passed');
ok($n->wait_log(qr/settle=\$upstream_http_x_usage_total_tokens of zone "tokens" is "1000000000001": over the maximum of 1000000000000, the estimate 2000 stays charged/, 1, 2),
    'over 10^12: logged as over the maximum');
ok(!$n->grep_log(qr/"1000000000001": not a number/), 'over 10^12: not "not a number"');

# item 3: a leaky_bucket override deleted, the zone's 10r/s burst=5 again

$t->redis('SET', 'rrl:{lb:abuser}:limit', '1r/h burst=2');
is(join(' ', map { $n->get('/lb/?key=abuser')->{status} } 1 .. 4), '200 200 200 429',
    'leaky override: 1r/h burst=2 lets 3 pass');
$t->redis('DEL', 'rrl:{lb:abuser}:limit');
sleep 1;
$r = $n->get('/lb/?key=abuser');
is($r->{status}, 200, 'leaky override deleted: the zone rate applies again');
# the 3 units taken under the override count at the zone's 100 ms: 4 of 6
is($r->{h}{'x-ratelimit-remaining'}, 2, 'leaky override deleted: 3 units, now at the zone interval');
sleep 0.7;
is(join(' ', map { $n->get('/lb/?key=abuser')->{status} } 1 .. 7),
    '200 200 200 200 200 200 429', 'leaky override deleted: the zone burst again (6)');

# item 4: an override at the bounds, every algorithm

for my $z (qw(lb otb ofw osw osl)) {
    my $k = "big-$z";
    $t->redis('SET', "rrl:{$z:$k}:limit",
        $z eq 'osl' ? '10000r/1ms' : '1000000000r/1ms burst=1000000000');
    my @s = map { my $x = $n->get("/o/$z/?key=$k"); "$x->{status} " . ($x->{h}{'x-rl-status'} // '-') } 1 .. 5;
    is(join(',', @s), join(',', ('200 PASSED') x 5), "override at the bounds on $z: every request passes");
}
# R1: a slow response (about 1 s), its key's override changed meanwhile

my $w = $t->wait_window(3600, 10) / 3600 - 1;

sub slow_with_change {
    my ($key, $usage, @change) = @_;
    my $s = RRL::Test::http_send($n->port, 'GET', "/slow?key=$key&usage=$usage");
    sleep 0.3;
    $t->redis(@change);
    return RRL::Test::http_read($s, timeout => 10);
}

$t->redis('SET', 'rrl:{r1:u}:limit', 'unlimited');
$r = slow_with_change('u', 500, 'DEL', 'rrl:{r1:u}:limit');
is($r->{status}, 200, 'R1 unlimited then deleted: passed');
is(length($r->{body} // ''), 300_000, 'R1 unlimited then deleted: all of it');
is(settled('r1', 1), 1, 'R1 unlimited then deleted: counted settled');
sleep 0.2;
is($t->redis('EXISTS', 'rrl:{r1:u}:fw'), 0,
    'R1 unlimited then deleted: nothing charged (no debt of units never taken)');

$t->redis('SET', 'rrl:{r1:m}:limit', '50r/h');
$r = slow_with_change('m', 60, 'SET', 'rrl:{r1:m}:limit', 'unlimited');
is($r->{status}, 200, 'R1 a rate then unlimited: passed');
is(settled('r1', 2), 2, 'R1 a rate then unlimited: counted settled');
sleep 0.2;
is($t->redis('GET', 'rrl:{r1:m}:fw'), "$w:60", 'R1 a rate then unlimited: the debt of 50 taken');
$t->redis('DEL', 'rrl:{r1:m}:limit');
is($n->get('/slow?key=m&usage=10')->{status}, 200, 'R1 deleted: the zone\'s 200r/h, 60 + 10 taken');
is($t->redis('GET', 'rrl:{r1:m}:fw'), "$w:70", 'R1 deleted: counted on');

ok(!$n->grep_log(qr/unexpected script reply/), 'no unexpected script reply');
ok(!$n->grep_log(qr/settlement in zone "\w+" dropped/), 'no settlement dropped');

$t->done_testing;
