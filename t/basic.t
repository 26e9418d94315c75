#!/usr/bin/perl

# Fixed window basics: N pass then 429, the exact legacy header values,
# Retry-After, the variables (headers and access log), the rejection log
# line, independent keys, empty keys, unlimited locations, the Redis state,
# and a limited proxy_pass location.

use strict;
use warnings;

use FindBin;
use IO::Socket::INET;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->write_file('html/free/index.html', "FREE\n");
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=basic rate=3r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=proxied rate=2r/h algorithm=fixed_window;

    log_format rl '$request_uri $status $redis_ratelimit_status '
                  '$redis_ratelimit_remaining';

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        access_log %%NGINX_DIR%%/rl.log rl;

        add_header X-RL-Status $redis_ratelimit_status always;
        add_header X-RL-Remaining $redis_ratelimit_remaining always;

        location / {
            redis_ratelimit zone=basic;
        }

        location /free/ {
        }

        location /proxy/ {
            redis_ratelimit zone=proxied;
            proxy_pass http://127.0.0.1:%%PORT_1%%/;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;
        location / {
            return 200 "backend $uri\n";
        }
    }
}
EOF

my $P = 3600;
my $wend = $t->wait_window($P, 10);
my $window = $wend / $P - 1;

# N pass, remaining counts down; GET / goes through an internal redirect to
# /index.html, which must not count again

for my $i (1 .. 3) {
    my $r = $n->get('/?key=a');
    is($r->{status}, 200, "key a, request $i: 200");
    is($r->{body}, "OK\n", "key a, request $i: the file");
    is($r->{h}{'x-ratelimit-limit'}, 3, "key a, request $i: X-RateLimit-Limit");
    is($r->{h}{'x-ratelimit-remaining'}, 3 - $i,
        "key a, request $i: X-RateLimit-Remaining");
    is($r->{h}{'x-ratelimit-reset'}, $wend,
        "key a, request $i: X-RateLimit-Reset is the end of the window");
    ok(!exists $r->{h}{'retry-after'}, "key a, request $i: no Retry-After");
    is($r->{h}{'x-rl-status'}, 'PASSED', "key a, request $i: status PASSED");
    is($r->{h}{'x-rl-remaining'}, 3 - $i,
        "key a, request $i: \$redis_ratelimit_remaining");
    is(join(',', map { $r->{n}{$_} // 0 }
            qw(x-ratelimit-limit x-ratelimit-remaining x-ratelimit-reset)),
        '1,1,1', "key a, request $i: each header once");
}

is($t->redis('GET', 'rrl:{basic:a}:fw'), "$window:3",
    'Redis state: window index and count 3');

# over the limit

my @retry;

for my $i (4 .. 5) {
    my $t0 = $t->redis_time;
    my $r = $n->get('/?key=a');
    my $t1 = $t->redis_time;

    is($r->{status}, 429, "key a, request $i: 429");
    like($r->{body}, qr/429 Too Many Requests/, "key a, request $i: 429 page");
    is($r->{h}{'x-ratelimit-limit'}, 3, "key a, request $i: X-RateLimit-Limit");
    is($r->{h}{'x-ratelimit-remaining'}, 0,
        "key a, request $i: X-RateLimit-Remaining 0");
    is($r->{h}{'x-ratelimit-reset'}, $wend, "key a, request $i: X-RateLimit-Reset");
    is($r->{n}{'retry-after'}, 1, "key a, request $i: one Retry-After");

    my $ra = $r->{h}{'retry-after'} // -1;
    push @retry, $ra;
    cmp_ok($ra, '>=', ceil($wend - $t1), "key a, request $i: Retry-After >= lower bound");
    cmp_ok($ra, '<=', ceil($wend - $t0), "key a, request $i: Retry-After <= upper bound");
    is($r->{h}{'x-rl-status'}, 'REJECTED', "key a, request $i: status REJECTED");
    is($r->{h}{'x-rl-remaining'}, 0, "key a, request $i: \$redis_ratelimit_remaining 0");
}

is($t->redis('GET', 'rrl:{basic:a}:fw'), "$window:3",
    'Redis state: rejected requests consumed nothing');

# the time first: PTTL only shrinks after it
my $now = $t->redis_time;
my $pttl = $t->redis('PTTL', 'rrl:{basic:a}:fw');
cmp_ok($pttl, '>', 0, 'the key expires');
cmp_ok($pttl, '<=', ($wend - $now) * 1000 + 50, 'the key expires at the window end');

# the second rejection is the deny cache's (on by default): Redis was not
# asked again
my @log = $n->grep_log(qr/limiting requests/);
is(scalar @log, 2, 'two rejections logged');
for my $i (0 .. 1) {
    my $how = $i ? ' (cached)' : '';
    like($log[$i] // '',
        qr/\[error\] \d+#\d+: \*\d+ limiting requests by zone "basic"\Q$how\E, key "a", rate 3r\/h, retry after \Q$retry[$i]\Es, client: 127\.0\.0\.1, server: , request: "GET \/\?key=a HTTP\/1\.0"/,
        "rejection $i logged at error, with the Retry-After value");
}

# another key is independent

my $r = $n->get('/?key=b');
is($r->{status}, 200, 'key b: 200');
is($r->{h}{'x-ratelimit-remaining'}, 2, 'key b: its own count');
is($t->redis('GET', 'rrl:{basic:b}:fw'), "$window:1", 'key b: Redis state');

# /index.html directly: no redirect, same key, same count
$r = $n->get('/index.html?key=b');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'key b, direct file: counted once');

# an empty key is not limited

for my $uri ('/', '/?key=') {
    for my $i (1 .. 5) {
        $r = $n->get($uri);
        is($r->{status}, 200, "$uri request $i: 200");
        is($r->{h}{'x-rl-status'}, 'PASSED', "$uri request $i: PASSED");
        ok(!exists $r->{h}{'x-rl-remaining'},
            "$uri request $i: no \$redis_ratelimit_remaining");
        ok(!(grep { /^x-ratelimit-|^retry-after$/ } keys %{ $r->{h} }),
            "$uri request $i: no rate limit headers");
    }
}

# a location without limits

$r = $n->get('/free/?key=a');
is($r->{status}, 200, 'unlimited location: 200 for an exhausted key');
is($r->{body}, "FREE\n", 'unlimited location: its file');
ok(!exists $r->{h}{'x-rl-status'}, 'unlimited location: no status');
ok(!(grep { /^x-ratelimit-/ } keys %{ $r->{h} }),
    'unlimited location: no rate limit headers');

is(join(' ', sort $t->redis('KEYS', 'rrl:*')),
    'rrl:{basic:a}:fw rrl:{basic:b}:fw', 'Redis: only the limited keys');

# a limited proxy_pass location

for my $i (1 .. 2) {
    $r = $n->get("/proxy/x$i?key=p");
    is($r->{status}, 200, "proxied request $i: 200");
    is($r->{body}, "backend /x$i\n", "proxied request $i: the backend answered");
    is($r->{h}{'x-ratelimit-remaining'}, 2 - $i, "proxied request $i: remaining");
}

$r = $n->get('/proxy/x3?key=p');
is($r->{status}, 429, 'proxied request 3: 429');
unlike($r->{body}, qr/backend/, 'proxied request 3: the backend was not asked');
is($t->redis('GET', 'rrl:{proxied:p}:fw'), "$window:2", 'proxied: Redis state');

# keepalive: four pipelined requests on one connection, each limited

{
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $n->port,
        Proto => 'tcp', Timeout => 5);
    print $s join '', map { "GET /?key=ka HTTP/1.1\r\nHost: localhost\r\n"
        . ($_ == 4 ? "Connection: close\r\n" : '') . "\r\n" } 1 .. 4;
    local $/;
    my $all = <$s> // '';
    my @st = $all =~ m{^HTTP/1\.1 (\d{3}) }mg;
    my @rem = $all =~ m{^X-RateLimit-Remaining: (\d+)\r$}mg;
    is("@st", '200 200 200 429', 'keepalive: each pipelined request limited');
    is("@rem", '2 1 0 0', 'keepalive: remaining per request');
}

# the variables in the access log

my @access = split /\n/, RRL::Test::read_file("$n->{dir}/rl.log");
is_deeply([@access[0 .. 4]], [
    '/?key=a 200 PASSED 2',
    '/?key=a 200 PASSED 1',
    '/?key=a 200 PASSED 0',
    '/?key=a 429 REJECTED 0',
    '/?key=a 429 REJECTED 0',
], 'access log: status and remaining of key a');
is($access[7], '/ 200 PASSED -', 'access log: empty key');
is((grep { $_ eq '/free/?key=a 200 - -' } @access), 1,
    'access log: unlimited location has no values');

$t->done_testing;
