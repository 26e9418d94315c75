#!/usr/bin/perl

# SCRIPT FLUSH between requests: the next call gets NOSCRIPT, the module
# loads the script again and retries once; the request is decided normally
# and counted exactly once, also when several requests hit NOSCRIPT at once.

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
    redis_ratelimit_zone $arg_key zone=sf rate=5r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=sfl rate=5r/h algorithm=sliding_log;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit_fail closed;

        location / {
            redis_ratelimit zone=sf;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=sfl;
        }
    }
}
EOF2

my $P = 3600;
my $w = $t->wait_window($P, 10) / $P - 1;

sub scripts {
    my ($line) = grep { /^number_of_cached_scripts:/ } $t->redis('INFO', 'memory');
    return ($line // '') =~ /:(\d+)/ ? $1 : -1;
}

sub state { $t->redis('GET', 'rrl:{sf:s}:fw') }

my $r = $n->get('/?key=s');
is($r->{h}{'x-rl-status'}, 'PASSED', 'request 1: PASSED');
is(state(), "$w:1", 'request 1: counted');
is(scripts(), 1, 'the script is cached in Redis');

is($t->redis('SCRIPT', 'FLUSH'), 'OK', 'SCRIPT FLUSH');
is(scripts(), 0, 'no script cached');

$r = $n->get('/?key=s');
is($r->{status}, 200, 'request 2, after the flush: 200');
is($r->{h}{'x-rl-status'}, 'PASSED', 'request 2: PASSED, not a failure');
is($r->{h}{'x-ratelimit-remaining'}, 3, 'request 2: Remaining 3');
is(state(), "$w:2", 'request 2: counted exactly once');
is(scripts(), 1, 'the script was loaded again');

# several requests at once after a flush

$t->redis('SCRIPT', 'FLUSH');

my @r = $n->parallel(map { '/?key=s' } 1 .. 3);
is(join(' ', map { $_->{h}{'x-rl-status'} // 'none' } @r), 'PASSED PASSED PASSED',
    'three at once after a flush: all PASSED');
is(join(' ', sort map { $_->{h}{'x-ratelimit-remaining'} // 'none' } @r), '0 1 2',
    'three at once: each counted once');
is(state(), "$w:5", 'three at once: Redis count 5');

# a rejection after a flush is a rejection, not a failure

$t->redis('SCRIPT', 'FLUSH');

$r = $n->get('/?key=s');
is($r->{status}, 429, 'over the limit after a flush: 429');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'over the limit after a flush: REJECTED');
is(state(), "$w:5", 'over the limit after a flush: nothing consumed');

# sliding log: one entry per request

$t->redis('SCRIPT', 'FLUSH');
$r = $n->get('/sl/?key=s');
is($r->{h}{'x-rl-status'}, 'PASSED', 'sliding log after a flush: PASSED');
is($t->redis('ZCARD', 'rrl:{sfl:s}:sl'), 1, 'sliding log after a flush: one entry');

is(scalar($n->grep_log(qr/\[error\].*redis_ratelimit:/)), 0,
    'no failure logged for NOSCRIPT');

$t->done_testing;
