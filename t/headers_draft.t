#!/usr/bin/perl

# redis_ratelimit_headers draft | both: RateLimit-Policy lists every limit
# of the request ("<zone>";q=N;w=SECONDS, rrl-burst for the buckets),
# RateLimit shows the one closest to exhaustion ("<zone>";r=R;t=T); both
# adds the legacy X-RateLimit-* too. Retry-After is never earlier than t.
# The variables $redis_ratelimit_zone, _reset and _rtt, in headers and in
# a JSON access log.

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
    redis_ratelimit_zone $arg_key zone=h rate=3r/h burst=2 algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=tb rate=10r/m burst=4 algorithm=token_bucket;
    redis_ratelimit_zone $arg_key zone=lb rate=1r/10s burst=2 algorithm=gcra;
    redis_ratelimit_zone $arg_key zone=sw rate=100r/10s;
    redis_ratelimit_zone $arg_key zone=sl rate=2r/500ms burst=1 algorithm=sliding_log;
    redis_ratelimit_zone $arg_key zone=one rate=1r/10s algorithm=gcra;
    redis_ratelimit_zone $arg_key 'zone=q"\\z' rate=1r/s algorithm=fixed_window;

    log_format rl escape=json '{"status":"$redis_ratelimit_status",'
                              '"remaining":"$redis_ratelimit_remaining",'
                              '"zone":"$redis_ratelimit_zone",'
                              '"reset":"$redis_ratelimit_reset",'
                              '"rtt":"$redis_ratelimit_rtt"}';

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        access_log %%NGINX_DIR%%/rl.log rl;
        redis_ratelimit zone=h;
        redis_ratelimit_headers draft;

        add_header X-Zone $redis_ratelimit_zone always;
        add_header X-Reset $redis_ratelimit_reset always;
        add_header X-Rtt $redis_ratelimit_rtt always;

        location / {
        }
        location /both/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_headers both;
        }
        location /off/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_headers off;
        }
        location /legacy/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_headers legacy;
        }
        location /all/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=h;
            redis_ratelimit zone=tb cost=3;
            redis_ratelimit zone=lb;
            redis_ratelimit zone=sw cost=2;
            redis_ratelimit zone=sl;
        }
        location /one/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
        }
        location /quoted/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit 'zone=q"\\z';
        }
    }
}
EOF2

my $P = 3600;
my $wend = $t->wait_window($P, 10);

sub rl_headers {
    my ($r) = @_;
    return join ' ', sort grep { /ratelimit|^retry-after$/ } keys %{ $r->{h} };
}

# draft alone: a fixed window, t counts to its end

for my $i (1 .. 5) {
    my $t0 = $t->redis_time;
    my $r = $n->get('/?key=D');
    my $t1 = $t->redis_time;
    is($r->{status}, 200, "draft $i: 200");
    is(rl_headers($r), 'ratelimit ratelimit-policy', "draft $i: the two headers");
    is($r->{h}{'ratelimit-policy'}, '"h";q=5;w=3600', "draft $i: RateLimit-Policy");
    my ($rem, $reset) = ($r->{h}{ratelimit} // '') =~ /^"h";r=(\d+);t=(\d+)$/;
    is($rem, 5 - $i, "draft $i: r");
    ok(defined $reset && $reset >= int($wend - $t1) && $reset <= int($wend - $t0) + 1,
        "draft $i: t to the window's end") or diag "$r->{h}{ratelimit} $t0 $t1 $wend";
    is($r->{h}{'x-reset'}, $reset, "draft $i: \$redis_ratelimit_reset is t");
    is($r->{h}{'x-zone'}, 'h', "draft $i: \$redis_ratelimit_zone");
    like($r->{h}{'x-rtt'} // '', qr/^\d+\.\d{3}$/, "draft $i: \$redis_ratelimit_rtt in ms");
}

my $r = $n->get('/?key=D');
is($r->{status}, 429, 'draft 6: 429');
is(rl_headers($r), 'ratelimit ratelimit-policy retry-after', 'draft 6: with Retry-After');
my ($reset) = ($r->{h}{ratelimit} // '') =~ /^"h";r=0;t=(\d+)$/;
ok(defined $reset, 'draft 6: r=0') or diag $r->{h}{ratelimit};
is($r->{h}{'retry-after'}, $reset, 'draft 6: Retry-After is t, to the window end');

# the deny cache answered that one or the next: no Redis call, no rtt

$r = $n->get('/?key=D');
is($r->{status}, 429, 'draft 7: 429');
is($r->{h}{'x-rtt'} // '', '', 'draft 7: answered by the deny cache: no rtt');
is($r->{h}{'x-zone'}, 'h', 'draft 7: zone');

# both: legacy and draft, the same numbers

for my $i (1 .. 2) {
    $r = $n->get('/both/?key=B');
    is(rl_headers($r), 'ratelimit ratelimit-policy x-ratelimit-limit '
        . 'x-ratelimit-remaining x-ratelimit-reset', "both $i: five headers");
    is($r->{h}{'x-ratelimit-remaining'}, 5 - $i, "both $i: X-RateLimit-Remaining");
    is($r->{h}{'x-ratelimit-limit'}, 5, "both $i: X-RateLimit-Limit");
    like($r->{h}{ratelimit}, qr/^"h";r=${\(5 - $i)};t=\d+$/, "both $i: RateLimit");
    is($r->{h}{'ratelimit-policy'}, '"h";q=5;w=3600', "both $i: RateLimit-Policy");
}

# off and legacy: no draft headers

$r = $n->get('/off/?key=O');
is(rl_headers($r), '', 'off: none');
is($r->{h}{'x-zone'}, 'h', 'off: the variables still are set');
$r = $n->get('/legacy/?key=L');
is(rl_headers($r), 'x-ratelimit-limit x-ratelimit-remaining x-ratelimit-reset',
    'legacy: only X-RateLimit-*');

# every algorithm in one request, costs over 1: the policy lists them in
# order; RateLimit shows the lowest remaining (tb: bucket 4, cost 3)

$r = $n->get('/all/?key=A');
is($r->{status}, 200, 'all: 200');
is($r->{h}{'ratelimit-policy'}, '"h";q=5;w=3600, "tb";q=10;w=60;rrl-burst=4, '
    . '"lb";q=1;w=10;rrl-burst=2, "sw";q=100;w=10, "sl";q=3;w=1',
    'all: RateLimit-Policy of five limits');
is($r->{h}{ratelimit}, '"tb";r=1;t=18', 'all: tb, 3 tokens back in 18 s');
is($r->{h}{'x-zone'}, 'tb', 'all: $redis_ratelimit_zone is the closest');
is($r->{h}{'x-reset'}, 18, 'all: $redis_ratelimit_reset');

# now lb (3 at once, 2 left) is closest, then tb rejects (1 token, cost 3)

$r = $n->get('/all/?key=A');
is($r->{status}, 429, 'all 2: 429, tb has 1 token for a cost of 3');
my ($t_tb) = ($r->{h}{ratelimit} // '') =~ /^"tb";r=1;t=(\d+)$/;
ok(defined $t_tb, 'all 2: RateLimit names the rejecting zone') or diag $r->{h}{ratelimit};
ok($t_tb >= 12 && $t_tb <= 13, 'all 2: t until 2 more tokens, 12 s') or diag $t_tb;
cmp_ok($r->{h}{'retry-after'}, '>=', $t_tb, 'all 2: Retry-After not earlier than t');
is($r->{h}{'x-zone'}, 'tb', 'all 2: $redis_ratelimit_zone is the rejecting one');

# a rejection by a leaky bucket: t is when a retry passes, as Retry-After

$r = $n->get('/one/?key=G');
is($r->{h}{ratelimit}, '"one";r=0;t=10', 'gcra 1: r=0, empty again in 10 s');
$r = $n->get('/one/?key=G');
is($r->{status}, 429, 'gcra 2: 429');
($reset) = ($r->{h}{ratelimit} // '') =~ /^"one";r=0;t=(\d+)$/;
ok(defined $reset && $reset >= 9 && $reset <= 10, 'gcra 2: t about 10 s')
    or diag $r->{h}{ratelimit};
is($r->{h}{'retry-after'}, $reset, 'gcra 2: Retry-After equals t');

# a zone name with a quote and a backslash: an escaped sf-string

$r = $n->get('/quoted/?key=Q');
is($r->{h}{'ratelimit-policy'}, '"q\\"\\\\z";q=1;w=1',
    'quoted: RateLimit-Policy escapes " and \\');
like($r->{h}{ratelimit}, qr/^"q\\"\\\\z";r=0;t=1$/, 'quoted: RateLimit escapes too');

# the JSON access log: all five variables

my @log = split /\n/, RRL::Test::read_file("$n->{dir}/rl.log");
like($log[0], qr/^\{"status":"PASSED","remaining":"4","zone":"h","reset":"\d+","rtt":"\d+\.\d{3}"\}$/,
    'access log: the first request');
like($log[6], qr/^\{"status":"REJECTED","remaining":"0","zone":"h","reset":"\d+","rtt":""\}$/,
    'access log: a cached rejection, no rtt');
like($log[-1], qr/^\{"status":"PASSED","remaining":"0","zone":"q\\"\\\\z","reset":"1","rtt":"\d+\.\d{3}"\}$/,
    'access log: the quoted zone, JSON-escaped');

$t->done_testing;
