#!/usr/bin/perl

# redis_ratelimit_dry_run: requests over the limit are logged ("dry run")
# and marked REJECTED_DRY_RUN but served; what passes is counted as usual;
# the flag is inherited and can be turned off per location.

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
    redis_ratelimit_zone $arg_key zone=dz rate=2r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Remaining $redis_ratelimit_remaining always;
        redis_ratelimit zone=dz;

        location / {
        }

        location /dry/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_dry_run on;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=dz;
        redis_ratelimit_dry_run on;

        location / {
        }

        location /enforced/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_dry_run off;
        }
    }
}
EOF2

my $P = 3600;
my $w = $t->wait_window($P, 10) / $P - 1;

my @expect = (
    ['PASSED', 1], ['PASSED', 0],
    ['REJECTED_DRY_RUN', 0], ['REJECTED_DRY_RUN', 0], ['REJECTED_DRY_RUN', 0],
);

for my $i (0 .. 4) {
    my $r = $n->get('/dry/?key=d');
    is($r->{status}, 200, "dry run request $i: served");
    is($r->{body}, "OK\n", "dry run request $i: the file");
    is($r->{h}{'x-rl-status'}, $expect[$i][0], "dry run request $i: $expect[$i][0]");
    is($r->{h}{'x-rl-remaining'}, $expect[$i][1], "dry run request $i: remaining");
    is($r->{h}{'x-ratelimit-limit'}, 2, "dry run request $i: X-RateLimit-Limit");
    is($r->{h}{'x-ratelimit-remaining'}, $expect[$i][1],
        "dry run request $i: X-RateLimit-Remaining");
    ok(!exists $r->{h}{'retry-after'}, "dry run request $i: no Retry-After");
}

is($t->redis('GET', 'rrl:{dz:d}:fw'), "$w:2",
    'Redis: the passes counted, the dry-run rejections not');

my @log = $n->grep_log(qr/limiting requests/);
is(scalar @log, 3, 'three dry-run rejections logged');
like($_, qr/\[error\] .*limiting requests, dry run, by zone "dz", key "d", rate 2r\/h, retry after \d+s, client: 127\.0\.0\.1/,
    'dry run log line') for @log;

# the same zone and key, enforced: the dry run's passes count

my $r = $n->get('/?key=d');
is($r->{status}, 429, 'enforced location: 429 on the key the dry run used');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'enforced location: REJECTED');
is(scalar($n->grep_log(qr/limiting requests by zone "dz", key "d"/)), 1,
    'enforced rejection logged without "dry run"');

# server-level dry run, turned off in a location

for my $i (1 .. 3) {
    $r = $n->get('/?key=s', port => 1);
    is($r->{status}, 200, "server dry run $i: served");
}
is($r->{h}{'x-rl-status'}, 'REJECTED_DRY_RUN', 'server dry run: inherited');

$r = $n->get('/enforced/?key=s', port => 1);
is($r->{status}, 429, 'dry_run off in a location: enforced');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'dry_run off in a location: REJECTED');

$r = $n->get('/enforced/?key=s2', port => 1);
is($r->{status}, 200, 'dry_run off in a location: a fresh key passes');
is($r->{h}{'x-rl-status'}, 'PASSED', 'dry_run off in a location: PASSED');

$t->done_testing;
