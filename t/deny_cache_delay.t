#!/usr/bin/perl

# The deny cache behind a slow link: Redis is 1.5 s away (each way) from
# the first nginx, through bench/delay-proxy.c, and next to a second nginx.
# A rejection the first one learned is answered from its cache with a
# Retry-After that a client can wait out and then pass, even through the
# second nginx: Redis decided somewhere between the call's send and its
# reply, so the cache announces the wait to the latest of those ends (and
# stops rejecting at the earliest).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $dir = $t->testdir;
my $proxy = "$dir/delay-proxy";
system('cc', '-O2', '-o', $proxy, "$FindBin::Bin/../bench/delay-proxy.c") == 0
    or BAIL_OUT('cannot build bench/delay-proxy.c');

my $D = 1.5;    # one way, seconds
my $proxy_port = RRL::Test::free_port();
my $pid = fork // die "fork: $!";
if ($pid == 0) {
    exec $proxy, '127.0.0.1', $proxy_port, '127.0.0.1', $t->redis_port, $D * 1e6;
    exit 127;
}
$t->add_cleanup(sub { kill 'TERM', $pid; waitpid $pid, 0 });

# the same configuration for both, but where Redis is
my $conf = <<'EOF2';
http {
    redis_ratelimit_server 127.0.0.1:REDIS timeout=10s;
    redis_ratelimit_zone $arg_key zone=slow rate=1r/10s algorithm=token_bucket burst=1;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=slow;
    }
}
EOF2

(my $far_conf = $conf) =~ s/REDIS/$proxy_port/;
(my $near_conf = $conf) =~ s/REDIS/$t->redis_port/e;
my $far = $t->start_nginx($far_conf);
my $near = $t->start_nginx($near_conf);

# the far one's connection set up (its script loaded)
my $r = $far->get('/?key=warmup', timeout => 15);
is($r->{h}{'x-rl-status'}, 'PASSED', 'far: limiting, 2 x 1.5 s away');
cmp_ok($r->{time}, '>=', 2 * $D, 'far: the round trip takes 3 s');

# the bucket's token taken, then rejected by Redis: the rejection is learned
$r = $far->get('/?key=k', timeout => 15);
is($r->{h}{'x-rl-status'}, 'PASSED', 'far: the token');
$r = $far->get('/?key=k', timeout => 15);
is($r->{status}, 429, 'far: rejected by Redis');
cmp_ok($r->{time}, '>=', 2 * $D, 'far: Redis was asked');

# answered from the cache: at once
$r = $far->get('/?key=k');
my $t0 = time;
is($r->{status}, 429, 'far: rejected from the cache');
cmp_ok($r->{time}, '<', 1, 'far: not asked');
ok($far->wait_log(qr/zone "slow" \(cached\)/, 1, 2), 'far: logged (cached)');
my $wait = $r->{h}{'retry-after'};
ok(defined $wait && $wait >= 1, "far: Retry-After $wait");

# waited out exactly, through the server next to Redis: it passes
sleep($t0 + $wait - time);
$r = $near->get('/?key=k');
is($r->{h}{'x-rl-status'}, 'PASSED',
    "a client that waits Retry-After ($wait s) then passes, even near Redis");

$t->done_testing;
