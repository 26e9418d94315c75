#!/usr/bin/perl

# A lease zone beside a zone without lease= in one location (issue 25,
# item 2): such a request is never decided from leases (every limit must
# hold units), so it asks Redis for its cost alone; no lease is stored
# where no request of its location could use it. One nginx of two
# workers, one key, 60 requests 4 at a time within one 10 s window:
# - fixed_window 30r/10s lease=100% beside an exact 1000r/s: 30 pass (8
#   before the fix), and Redis's count is the 30 that passed;
# - the same with lease=50%: 30 (15 before);
# - two lease zones (50% and 30%) and an exact one in one location: 30;
# - a lease zone shared by a location with it alone and one with an exact
#   zone too, their requests interleaved: 30 pass in all, never more; the
#   location with the lease zone alone decides from its leases (metrics);
# - the lease zone alone: 30.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(time sleep);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
worker_processes 2;

http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=1s;
    redis_ratelimit_zone $arg_k zone=fwl rate=30r/10s algorithm=fixed_window lease=100%;
    redis_ratelimit_zone $arg_k zone=fwl50 rate=30r/10s algorithm=fixed_window lease=50%;
    redis_ratelimit_zone $arg_k zone=fwl30 rate=30r/10s algorithm=fixed_window lease=30%;
    redis_ratelimit_zone $arg_k zone=shared rate=30r/10s algorithm=fixed_window lease=50%;
    redis_ratelimit_zone $arg_k zone=exact rate=1000r/s;

    server {
        listen 127.0.0.1:%%PORT%% reuseport;
        add_header X-RL-Status $redis_ratelimit_status always;

        location = /metrics { redis_ratelimit_metrics; }

        location /mix/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fwl;
            redis_ratelimit zone=exact;
        }
        location /mix50/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fwl50;
            redis_ratelimit zone=exact;
        }
        location /multi/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fwl50;
            redis_ratelimit zone=fwl30;
            redis_ratelimit zone=exact;
        }
        location /alone/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=shared;
        }
        location /mixshared/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=shared;
            redis_ratelimit zone=exact;
        }
        location /fwl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=fwl;
        }
    }
}
EOF

# the count of a fixed_window state ("<window>:<count>"), 0 when none
sub fw_count { $t->fw_count($_[0]) }

sub metric {
    my ($zone, $label, $value) = @_;
    my $f = $label eq 'from' ? 'lease_requests_total' : 'leases_total';
    return ($n->zone_metrics($f, $zone, $label, $value))[0] // 0;
}

# 60 requests, 4 at a time, within one 10 s window: the statuses
sub sixty {
    my (@uris) = @_;
    my $end = $t->wait_window(10, 6);
    my @st;
    for my $round (0 .. 14) {
        push @st, map { $_->{status} // 0 }
            $n->parallel(map { $uris[($round * 4 + $_) % @uris] } 0 .. 3);
    }
    ok(time < $end, 'the 60 requests within one window');
    sleep 0.2;    # renewals are in
    return @st;
}

sub passes { scalar grep { $_ == 200 } @_ }

{
    my @st = sixty('/mix/?k=a');
    is(passes(@st), 30, 'lease=100% beside an exact zone: 30 of 60 pass');
    is(scalar(grep { $_ != 200 && $_ != 429 } @st), 0, 'the others 429');
    is(fw_count('rrl:{fwl:a}:fw'), 30, "Redis's count: the 30 that passed");
    is(metric('fwl', 'from', 'lease'), 0, 'none decided from a lease');
}

{
    my @st = sixty('/mix50/?k=b');
    is(passes(@st), 30, 'lease=50% beside an exact zone: 30 of 60 pass');
    is(fw_count('rrl:{fwl50:b}:fw'), 30, "Redis's count: 30");
}

{
    my @st = sixty('/multi/?k=c');
    is(passes(@st), 30, 'two lease zones and an exact one: 30 of 60 pass');
    is(fw_count('rrl:{fwl50:c}:fw'), 30, "Redis's count of the 50% zone: 30");
    is(fw_count('rrl:{fwl30:c}:fw'), 30, "Redis's count of the 30% zone: 30");
}

{
    my $from = metric('shared', 'from', 'lease');
    my @st = sixty('/alone/?k=d', '/mixshared/?k=d');
    is(passes(@st), 30, 'a lease zone shared with a location of it alone: '
        . '30 of 60 pass');
    is(fw_count('rrl:{shared:d}:fw'), 30, "Redis's count: 30");
    cmp_ok(metric('shared', 'from', 'lease') - $from, '>', 0,
        'the location of the lease zone alone decides from its leases');
}

{
    my @st = sixty('/fwl/?k=e');
    is(passes(@st), 30, 'the lease zone alone: 30 of 60 pass');
    is(fw_count('rrl:{fwl:e}:fw'), 30, "Redis's count: 30");
}

$t->done_testing;
