#!/usr/bin/perl

# redis_ratelimit_headers: legacy (the default) adds X-RateLimit-Limit,
# -Remaining and -Reset to passed and rejected responses, whatever their
# status; off adds none, but rejections keep Retry-After. burst counts in
# the limit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=h rate=3r/h burst=2 algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=hs rate=2r/10s burst=1 algorithm=sliding_log;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=h;

        location / {
        }
        location /off/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_headers off;
        }
        location /sl/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=hs;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=h;
        redis_ratelimit_headers off;

        location / {
        }
        location /legacy/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_headers legacy;
        }
    }
}
EOF2

my $P = 3600;
my $wend = $t->wait_window($P, 10);

sub rl_headers {
    my ($r) = @_;
    return join ' ', sort grep { /^x-ratelimit-|^retry-after$/ } keys %{ $r->{h} };
}

# legacy, with burst: the limit is N + burst

for my $i (1 .. 5) {
    my $r = $n->get('/?key=L');
    is($r->{status}, 200, "legacy $i: 200");
    is(rl_headers($r), 'x-ratelimit-limit x-ratelimit-remaining x-ratelimit-reset',
        "legacy $i: the three headers");
    is($r->{h}{'x-ratelimit-limit'}, 5, "legacy $i: Limit 3 + burst 2");
    is($r->{h}{'x-ratelimit-remaining'}, 5 - $i, "legacy $i: Remaining");
    is($r->{h}{'x-ratelimit-reset'}, $wend, "legacy $i: Reset");
}

my $r = $n->get('/?key=L');
is($r->{status}, 429, 'legacy 6: 429 after N + burst');
is(rl_headers($r), 'retry-after x-ratelimit-limit x-ratelimit-remaining x-ratelimit-reset',
    'legacy 6: the three headers and Retry-After');
is($r->{h}{'x-ratelimit-limit'}, 5, 'legacy 6: Limit');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'legacy 6: Remaining');

# legacy on a response that is not the file's 200

$r = $n->get('/missing?key=M');
is($r->{status}, 404, 'legacy, missing file: 404');
is($r->{h}{'x-ratelimit-remaining'}, 4, 'legacy, missing file: headers too');

# off: none on a pass, only Retry-After on a rejection

for my $i (1 .. 5) {
    $r = $n->get('/off/?key=O');
    is($r->{status}, 200, "off $i: 200");
    is(rl_headers($r), '', "off $i: no rate limit headers");
}
$r = $n->get('/off/?key=O');
is($r->{status}, 429, 'off 6: 429');
is(rl_headers($r), 'retry-after', 'off 6: only Retry-After');
cmp_ok($r->{h}{'retry-after'} // 0, '>=', 1, 'off 6: Retry-After >= 1');

# inheritance: off at the server level, legacy in a location

$r = $n->get('/?key=S', port => 1);
is($r->{status}, 200, 'server off: 200');
is(rl_headers($r), '', 'server off: inherited');
$r = $n->get('/legacy/?key=S', port => 1);
is($r->{h}{'x-ratelimit-remaining'}, 3, 'legacy in the location: headers');

# sliding log with burst: Limit 3, Reset now + period

for my $i (1 .. 3) {
    my $t0 = $t->redis_time;
    $r = $n->get('/sl/?key=W');
    my $t1 = $t->redis_time;
    is($r->{status}, 200, "sliding log $i: 200");
    is($r->{h}{'x-ratelimit-limit'}, 3, "sliding log $i: Limit 2 + burst 1");
    is($r->{h}{'x-ratelimit-remaining'}, 3 - $i, "sliding log $i: Remaining");
    my $reset = $r->{h}{'x-ratelimit-reset'} // 0;
    ok($reset >= ceil($t0 + 10) && $reset <= ceil($t1 + 10),
        "sliding log $i: Reset now + 10 s") or diag "$reset, $t0, $t1";
}
$r = $n->get('/sl/?key=W');
is($r->{status}, 429, 'sliding log 4: 429');
ok(($r->{h}{'retry-after'} // 0) >= 9 && ($r->{h}{'retry-after'} // 99) <= 10,
    'sliding log 4: Retry-After about the period');

$t->done_testing;
