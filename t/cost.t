#!/usr/bin/perl

# cost=N and cost=$variable: a request consumes N; a variable that is not a
# positive integer counts as 1; a cost no limit can ever grant is rejected
# with Retry-After of a whole period and consumes nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=c rate=5r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=cs rate=5r/h algorithm=sliding_log;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=c cost=2;
        }
        location /one/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=c;
        }
        location /var/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=c cost=$arg_cost;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=cs cost=$arg_cost;
        }
    }
}
EOF2

my $P = 3600;
my $wend = $t->wait_window($P, 10);
my $w = $wend / $P - 1;

sub state { $t->redis('GET', "rrl:{c:$_[0]}:fw") }

# constant cost

my $r = $n->get('/two/?key=a');
is($r->{status}, 200, 'cost=2, 1: 200');
is($r->{h}{'x-ratelimit-remaining'}, 3, 'cost=2, 1: Remaining 3');
$r = $n->get('/two/?key=a');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'cost=2, 2: Remaining 1');
is(state('a'), "$w:4", 'cost=2: Redis count 4');

$r = $n->get('/two/?key=a');
is($r->{status}, 429, 'cost=2, 3: 429 with 1 left');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'cost=2, 3: Remaining still 1');
is(state('a'), "$w:4", 'cost=2, 3: nothing consumed');

$r = $n->get('/one/?key=a');
is($r->{status}, 200, 'cost=1 on the same key: the last unit');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'cost=1: Remaining 0');
is(state('a'), "$w:5", 'Redis count 5');

# cost from a variable

my @seq = (
    ['3', 2, 200, 'cost 3'],
    ['abc', 1, 200, 'garbage counts 1'],
    ['0', 0, 200, 'zero counts 1'],
    ['-1', 0, 429, 'negative counts 1: rejected, none left'],
);
for my $s (@seq) {
    my ($cost, $rem, $status, $name) = @$s;
    $r = $n->get("/var/?key=v&cost=$cost");
    is($r->{status}, $status, "$name: $status");
    is($r->{h}{'x-ratelimit-remaining'}, $rem, "$name: Remaining $rem");
}
is(state('v'), "$w:5", 'variable costs: Redis count 5');

$r = $n->get('/var/?key=e');
is($r->{h}{'x-ratelimit-remaining'}, 4, 'empty cost counts 1');

# a cost over the capacity: never granted

$r = $n->get('/var/?key=big&cost=99999999999999');
is($r->{status}, 429, 'huge cost: 429');
is($r->{h}{'retry-after'}, $P, 'huge cost: Retry-After is the period');
is($r->{h}{'x-ratelimit-remaining'}, 5, 'huge cost: Remaining 5, nothing used');
is(state('big'), '', 'huge cost: no Redis state');

# wraps a 32-bit word to 0 (then 1), and a 64-bit one: still never granted
for my $huge (qw(4294967296 18446744073709551616)) {
    $r = $n->get("/var/?key=wrap&cost=$huge");
    is($r->{status}, 429, "cost $huge: 429");
    is($r->{h}{'x-ratelimit-remaining'}, 5, "cost $huge: nothing used");
}

$r = $n->get('/var/?key=six&cost=6');
is($r->{status}, 429, 'cost 6 of 5: 429');
is($r->{h}{'retry-after'}, $P, 'cost 6 of 5: Retry-After is the period');

$r = $n->get('/var/?key=six&cost=5');
is($r->{status}, 200, 'cost 5 of 5: 200');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'cost 5 of 5: Remaining 0');

# sliding log: one entry per unit of cost

$r = $n->get('/sl/?key=s&cost=2');
is($r->{h}{'x-ratelimit-remaining'}, 3, 'sliding log cost 2: Remaining 3');
is($t->redis('ZCARD', 'rrl:{cs:s}:sl'), 2, 'sliding log cost 2: two entries');
$r = $n->get('/sl/?key=s&cost=3');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'sliding log cost 3: Remaining 0');
is($t->redis('ZCARD', 'rrl:{cs:s}:sl'), 5, 'sliding log: five entries');
$r = $n->get('/sl/?key=s');
is($r->{status}, 429, 'sliding log: full');
is($t->redis('ZCARD', 'rrl:{cs:s}:sl'), 5, 'sliding log: still five entries');

$t->done_testing;
