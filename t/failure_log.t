#!/usr/bin/perl

# Failures are logged at most once a second a worker, and a request's
# failure for want of a slot map, while the seed is being asked, takes no
# line: the answer, or why none comes, is what that second's line says. A
# cluster seed refuses the password 0.8 s after the connection (t/lib/RRL/
# FakeRedis.pm's auth_denied_late), and requests fail every 50 ms meanwhile:
# error.log names the AUTH failure, still at most once a second. Before, the requests' failure of that second hid the AUTH
# failure (seen in CI, t/cluster.t).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;
use RRL::FakeRedis;

my $t = RRL::Test->new;
my $fake = RRL::FakeRedis->new(behaviour => 'auth_denied_late', delay => 0.8,
    dir => $t->testdir);
my $port = $fake->port;

my $n = $t->start_nginx(<<"EOF2");
http {
    redis_ratelimit_server 127.0.0.1:$port cluster username=rrl password=wrong
        timeout=1s;
    redis_ratelimit_zone \$arg_key zone=f rate=5r/s;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=f;
    }
}
EOF2

# requests every 50 ms from the start, well past the AUTH reply's arrival
my %seen;
my $end = time + 2.5;
while (time < $end) {
    my $r = $n->get('/?key=k');
    $seen{ ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none') }++;
    sleep 0.05;
}
is_deeply([keys %seen], ['200 FAILED_OPEN'], 'no slot map: the fail mode')
    or diag(explain(\%seen));

my @lines = $n->grep_log(qr/\[error\].*redis_ratelimit: /);
cmp_ok(scalar @lines, '<=', 4, 'error.log: at most a line a second ('
    . scalar(@lines) . ' in 2.5 s)')
    or diag(join "\n", @lines);
ok($n->grep_log(qr/\[error\].*redis_ratelimit: AUTH on 127\.0\.0\.1:$port failed: WRONGPASS/),
    'error.log: the AUTH failure, while requests failed every 50 ms')
    or diag(join "\n", $n->grep_log(qr/redis_ratelimit/));

$n->stop;
$fake->stop;

$t->done_testing;
