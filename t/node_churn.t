#!/usr/bin/perl

# A cluster that keeps naming new addresses (t/lib/RRL/FakeRedis.pm's
# ask_churn: every script call is answered ASK to an address never named
# before) does not grow a worker without bound: a node out of use serves
# the next new address. 6,000 requests, each asked to a new address: each
# gets the fail mode at once, and the worker's memory stays flat.
#
# timeout=10s: a fake stalled by a loaded machine for 5 timeouts in a row
# opens the circuit, and the requests failed fast meanwhile never ask it
# (t/redis_down.t's subject, not this file's): with 1s, CI once saw 8 of 6,000.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;
use RRL::FakeRedis;

my $t = RRL::Test->new;
my $fake = RRL::FakeRedis->new(behaviour => 'ask_churn', dir => $t->testdir);

my $n = $t->start_nginx(<<"EOF2");
http {
    redis_ratelimit_server 127.0.0.1:${\ $fake->port} cluster timeout=10s;
    redis_ratelimit_zone \$arg_key zone=c rate=5r/s;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status \$redis_ratelimit_status always;
        redis_ratelimit zone=c;
    }
}
EOF2

my ($worker) = $n->worker_pids;

sub rss_kb {
    return RRL::Test::read_file("/proc/$worker/status") =~ /^VmRSS:\s*(\d+) kB/m
        ? $1 : 0;
}

sub churn {
    my ($count, $from) = @_;
    my %seen;
    for my $i ($from .. $from + $count - 1) {
        my $r = $n->get("/?key=k$i");
        $seen{ ($r->{status} // 'none') . ' ' . ($r->{h}{'x-rl-status'} // 'none') }++;
    }
    return \%seen;
}

# warm up: the allocator's arenas, the log's buffers
my $seen = churn(1000, 0);
is_deeply($seen, { '200 FAILED_OPEN' => 1000 }, 'asked to new addresses: the fail mode')
    or diag(explain($seen));
my $before = rss_kb();

$seen = churn(5000, 1000);
is_deeply($seen, { '200 FAILED_OPEN' => 5000 }, '5,000 more: the fail mode')
    or diag(explain($seen));
my $after = rss_kb();

# a node is about 400 bytes: 5,000 new ones were 2 MB. Under ASan freed
# memory is held in quarantine, and RSS grows with every request's pool.
SKIP: {
    skip 'RSS under ASan grows with its quarantine', 1 if RRL::Test::nginx_preload();
    cmp_ok($after - $before, '<', 1024,
        "5,000 new addresses: the worker grew ${\ ($after - $before)} kB ($before -> $after)");
}
is_deeply([$n->worker_pids], [$worker], 'the same worker');
cmp_ok($fake->stats->{EVALSHA} // 0, '>=', 6000, 'every request asked the fake')
    or diag(explain($fake->stats),
        grep { !/no more in use|connection lost|\[notice\]/ } $n->log_lines);

$t->done_testing;
