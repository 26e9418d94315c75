#!/usr/bin/perl

# settle=VALUE, a smoke test of the shim (the full ones: t/settle*.t): a
# refund, a debt, no header, garbage; $redis_ratelimit_cost; the metrics.
# The upstream is a second server of the same nginx that answers with
# X-Usage-Total-Tokens: N from ?usage=N.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=tok rate=1000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Cost $redis_ratelimit_cost always;

        location /v {
            redis_ratelimit zone=tok cost=100 settle=$upstream_http_x_usage_total_tokens;
            proxy_pass http://127.0.0.1:%%PORT_1%%/up;
        }

        location /metrics {
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
EOF2

my $P = 3600;
my $w = $t->wait_window($P, 10) / $P - 1;

# the count of key k once the settlement is in (it is in the background)
sub count_becomes {
    my ($k, $want) = @_;
    my $v;
    for (1 .. 50) {
        $v = $t->redis('GET', "rrl:{tok:$k}:fw") // '';
        return $v if $v eq "$w:$want";
        sleep 0.05;
    }
    return $v;
}

# a refund: estimate 100, actual 30

my $r = $n->get('/v?key=a&usage=30');
is($r->{status}, 200, 'refund: passed');
is($r->{h}{'x-ratelimit-remaining'}, 900, 'refund: the estimate charged');
is($r->{h}{'x-rl-cost'}, 100, 'refund: $redis_ratelimit_cost is the estimate');
is(count_becomes('a', 30), "$w:30", 'refund: 70 given back');

$r = $n->get('/v?key=a&usage=100');
is($r->{h}{'x-ratelimit-remaining'}, 870, 'refund: the next request sees 70 more');

# a debt: estimate 100, actual 1500, beyond the limit

$r = $n->get('/v?key=b&usage=1500');
is($r->{status}, 200, 'debt: passed');
is(count_becomes('b', 1500), "$w:1500", 'debt: 1400 more charged');

$r = $n->get('/v?key=b&usage=1');
is($r->{status}, 429, 'debt: the next request rejected');
is($r->{h}{'x-rl-cost'}, 0, 'debt: $redis_ratelimit_cost 0 on a rejection');
ok($r->{h}{'retry-after'} > 0, 'debt: Retry-After');

# no header, garbage: the estimate stays (one failure logged a second, of
# any kind: a second after the last)

sleep 1.1;
$r = $n->get('/v?key=c');
is($r->{status}, 200, 'no header: passed');
$r = $n->get('/v?key=c&usage=12abc');
is($r->{status}, 200, 'garbage: passed');
sleep 0.3;
is($t->redis('GET', 'rrl:{tok:c}:fw'), "$w:200", 'no header, garbage: the estimates stay');
ok(scalar $n->grep_log(qr/settle=\$upstream_http_x_usage_total_tokens of zone "tok" is "": not a number, the estimate 100 stays charged/),
    'no header: logged');

# the metrics

my $m = $n->get('/metrics')->{body};
like($m, qr/^redis_ratelimit_settlements_total\{zone="tok",result="settled"\} 3$/m,
    'metrics: settled (the refund, the debt, the one of A == E)');
like($m, qr/^redis_ratelimit_settlements_total\{zone="tok",result="settle_failed"\} 2$/m,
    'metrics: settle_failed (no header, garbage)');

$t->done_testing;
