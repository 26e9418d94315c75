#!/usr/bin/perl

# redis_ratelimit_dry_run with Redis unreachable: nothing is rejected,
# whatever the cause. "fail closed" and "fail local" (over its local limit)
# serve the request and $redis_ratelimit_status says what would have
# happened: FAILED_CLOSED, FAILED_LOCAL; with problem_json too. Without dry
# run, the same locations reject.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;

# nobody listens on the Redis port
my $dead = RRL::Test::free_port();

my $n = $t->start_nginx(<<"EOF2");
http {
    redis_ratelimit_server 127.0.0.1:$dead timeout=200ms;
    redis_ratelimit_zone \$arg_key zone=df rate=1r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=df;
        redis_ratelimit_dry_run on;

        location /closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
        }

        location /closed-problem/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
            redis_ratelimit_problem_json on;
        }

        location /local/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail local;
        }

        location /enforced-closed/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail closed;
            redis_ratelimit_dry_run off;
        }

        location /enforced-local/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_fail local;
            redis_ratelimit_dry_run off;
        }
    }
}
EOF2

for my $loc (qw(closed closed-problem)) {
    for my $i (1 .. 3) {
        my $r = $n->get("/$loc/?key=a");
        is($r->{status}, 200, "$loc, dry run, request $i: served");
        is($r->{body}, "OK\n", "$loc, dry run, request $i: the file");
        is($r->{h}{'x-rl-status'}, 'FAILED_CLOSED',
            "$loc, dry run, request $i: FAILED_CLOSED");
        ok(!exists $r->{h}{'retry-after'}, "$loc, dry run, request $i: no Retry-After");
    }
}

# rate=1r/h: the local zone passes the first, then would reject
for my $i (1 .. 3) {
    my $r = $n->get('/local/?key=b');
    is($r->{status}, 200, "local, dry run, request $i: served");
    is($r->{h}{'x-rl-status'}, 'FAILED_LOCAL', "local, dry run, request $i: FAILED_LOCAL");
}

my $r = $n->get('/enforced-closed/?key=c');
is($r->{status}, 429, 'closed, enforced: 429');
is($r->{h}{'x-rl-status'}, 'FAILED_CLOSED', 'closed, enforced: FAILED_CLOSED');

$r = $n->get('/enforced-local/?key=d');
is($r->{status}, 200, 'local, enforced: the first passes');
$r = $n->get('/enforced-local/?key=d');
is($r->{status}, 429, 'local, enforced: the second is rejected');
is($r->{h}{'x-rl-status'}, 'FAILED_LOCAL', 'local, enforced: FAILED_LOCAL');

$t->done_testing;
