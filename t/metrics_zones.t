#!/usr/bin/perl

# redis_ratelimit_metrics with several limits a request: a rejection
# counts in the zone that rejected it, not in the request's other zones
# (they neither decided it nor consumed); a pass counts in every zone.
# Rejections from Redis and from the deny cache alike; dry run too.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=strict rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=loose rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=strict_dry rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=loose_dry rate=1000r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /both {
            redis_ratelimit zone=strict;
            redis_ratelimit zone=loose;
            try_files /index.html =404;
        }

        location /dry {
            redis_ratelimit zone=strict_dry;
            redis_ratelimit zone=loose_dry;
            redis_ratelimit_dry_run on;
            try_files /index.html =404;
        }

        location = /metrics {
            redis_ratelimit_metrics;
        }
    }
}
EOF

$t->write_file('html/index.html', "ok\n");

my @both = map { $n->get('/both?key=a')->{h}{'x-rl-status'} // 'none' } 1 .. 4;
is("@both", 'PASSED REJECTED REJECTED REJECTED', '/both: 1 passed, then rejected');
my @dry = map { $n->get('/dry?key=a')->{h}{'x-rl-status'} // 'none' } 1 .. 3;
is("@dry", 'PASSED REJECTED_DRY_RUN REJECTED_DRY_RUN', '/dry: 1 passed, then dry run');

my %m;
for (split /\n/, $n->get('/metrics')->{body}) {
    $m{$1} = $2 if /^(redis_ratelimit_requests_total\{[^}]*\}) (\d+)$/;
}
sub count {
    my ($zone, $status) = @_;
    return $m{"redis_ratelimit_requests_total{zone=\"$zone\",status=\"$status\"}"};
}

is(count('strict', 'passed'), 1, 'strict: 1 passed');
is(count('strict', 'rejected'), 3, 'strict: the 3 rejections are its own');
is(count('loose', 'passed'), 1, 'loose: 1 passed');
is(count('loose', 'rejected'), 0, 'loose: none of the rejections is counted there');
is(count('strict_dry', 'rejected_dry_run'), 2, 'strict_dry: 2 dry run rejections');
is(count('loose_dry', 'rejected_dry_run'), 0, 'loose_dry: none');
is(count('loose_dry', 'passed'), 1, 'loose_dry: 1 passed');

$t->done_testing;
