#!/usr/bin/perl

# redis_ratelimit_status: the rejection status (default 429), other codes
# from 400 to 599 with the same headers, 444 (close the connection with no
# response), inheritance, and error_page on a rejection.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->write_file('html/limited.html', "SLOW DOWN\n");
$t->start_redis;

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $uri zone=st rate=1r/h;

    log_format st '$uri $status $redis_ratelimit_status';

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        access_log %%NGINX_DIR%%/st.log st;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=st;

        location /default/ {
        }
        location /s503/ {
            redis_ratelimit_status 503;
        }
        location /s400/ {
            redis_ratelimit_status 400;
        }
        location /s599/ {
            redis_ratelimit_status 599;
        }
        location /s444/ {
            redis_ratelimit_status 444;
        }
        location /page/ {
            error_page 429 /limited.html;
        }
        location = /limited.html {
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=st;
        redis_ratelimit_status 503;

        location /inherited/ {
        }
        location /overridden/ {
            redis_ratelimit_status 418;
        }
    }
}
EOF2

$t->wait_window(3600, 10);

for my $d (qw(default s503 s400 s599 s444 page inherited overridden)) {
    $t->write_file("html/$d/index.html", "$d\n");
}

# the second request of a URI is rejected: returns both responses
sub twice {
    my ($uri, $port) = @_;
    my @r = map { $n->get($uri, port => $port // 0) } 1 .. 2;
    is($r[0]{status}, 200, "$uri: first request passes");
    return $r[1];
}

my %code = (default => 429, s503 => 503, s400 => 400, s599 => 599);

for my $d (sort keys %code) {
    my $r = twice("/$d/");
    is($r->{status}, $code{$d}, "/$d/: rejected with $code{$d}");
    is($r->{h}{'x-rl-status'}, 'REJECTED', "/$d/: REJECTED");
    is($r->{n}{'retry-after'}, 1, "/$d/: Retry-After");
    cmp_ok($r->{h}{'retry-after'} // 0, '>=', 1, "/$d/: Retry-After >= 1");
    is($r->{h}{'x-ratelimit-limit'}, 1, "/$d/: X-RateLimit-Limit");
    is($r->{h}{'x-ratelimit-remaining'}, 0, "/$d/: X-RateLimit-Remaining");
}

# 444: the connection is closed without a response

my $r = twice('/s444/');
is($r->{status}, undef, '/s444/: no status line');
is($r->{raw}, '', '/s444/: nothing at all was sent');
is($r->{error}, undef, '/s444/: the connection was closed (not a timeout)');
is(scalar($n->grep_log(qr/limiting requests by zone "st", key "\/s444\/"/)), 1,
    '/s444/: the rejection is logged');
$r = $n->get('/default/x');
is($r->{status}, 404, 'the server still answers after a 444');

# error_page: the page of the rejection, the status and headers kept

$r = twice('/page/');
is($r->{status}, 429, 'error_page: status 429');
is($r->{body}, "SLOW DOWN\n", 'error_page: its page');
is($r->{h}{'x-rl-status'}, 'REJECTED', 'error_page: REJECTED');
is(join(',', map { $r->{n}{$_} // 0 }
        qw(retry-after x-ratelimit-limit x-ratelimit-remaining x-ratelimit-reset)),
    '1,1,1,1', 'error_page: each rate limit header once');
is($t->redis('EXISTS', 'rrl:{st:/page/}:sw'), 1,
    'error_page: the key of the limited URI (sliding_window, the default)');
is(join(' ', $t->redis('KEYS', 'rrl:{st:/limited.html}:*')), '',
    'error_page: the internal redirect was not limited again');

# inheritance from the server level

$r = twice('/inherited/', 1);
is($r->{status}, 503, 'inherited from the server: 503');
$r = twice('/overridden/', 1);
is($r->{status}, 418, 'overridden in the location: 418');

# the access log has the status of every rejection

my $log = RRL::Test::read_file("$n->{dir}/st.log");
like($log, qr{^/s503/ 503 REJECTED$}m, 'access log: 503 REJECTED');
like($log, qr{^/s444/ 444 REJECTED$}m, 'access log: 444 REJECTED');
like($log, qr{^/limited\.html 429 REJECTED$}m, 'access log: error_page 429 REJECTED');

$t->done_testing;
