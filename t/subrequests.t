#!/usr/bin/perl

# Subrequests share their main request's context: the request is limited
# once, by the first of them to reach the handler, and any other that
# arrives while that call is in flight waits for it and is resumed by it.
# Parallel subrequests (two mirrors, a mirror fired twice through an index
# redirect, parallel SSI includes) each end: the server closes the
# connection, the main request's access log line is written, no connection
# is left behind.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

$t->write_file('html/two-mirrors.html', "main\n");
$t->write_file('html/m/1', "m1\n");
$t->write_file('html/m/2', "m2\n");
$t->write_file('html/inc/1', 'one');
$t->write_file('html/inc/2', 'two');
$t->write_file('html/page.shtml',
    'A<!--# include virtual="/inc/1?key=$arg_key" -->'
    . 'B<!--# include virtual="/inc/2?key=$arg_key" -->C');
$t->write_file('html/slow.shtml',
    'A<!--# include virtual="/incslow/1?key=$arg_key" -->'
    . 'B<!--# include virtual="/incslow/2?key=$arg_key" -->C');
$t->write_file('html/incslow/1', 'one');
$t->write_file('html/incslow/2', 'two');
$t->write_file('html/redirect/index.html', "index\n");

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%% timeout=3s;
    redis_ratelimit_zone $arg_key zone=sub rate=1000r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=one rate=1r/h algorithm=fixed_window;

    log_format main '$request_uri $status $redis_ratelimit_status';

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        access_log %%TESTDIR%%/access.log main;
        default_type text/html;

        location = /two-mirrors.html {
            mirror /m/1;
            mirror /m/2;
        }

        location /m/ {
            internal;
            redis_ratelimit zone=sub;
        }

        # the mirror fires, then index redirects to /redirect/index.html,
        # which fires it again
        location /redirect/ {
            mirror /m/1;
        }

        location = /page.shtml {
            ssi on;
        }

        location = /slow.shtml {
            ssi on;
        }

        location /inc/ {
            redis_ratelimit zone=sub;
        }

        location /incslow/ {
            redis_ratelimit zone=one;
        }

        location = /status {
            stub_status;
        }
    }
}
EOF

my $port = $n->port;

sub access_lines {
    my ($re) = @_;
    return grep { $_ =~ $re } split /\n/,
        RRL::Test::read_file($t->testdir . '/access.log');
}

sub wait_access {
    my ($re, $timeout) = @_;
    my $deadline = time + $timeout;
    while (time < $deadline) {
        return 1 if access_lines($re);
        sleep 0.05;
    }
    return 0;
}

sub active_connections {
    my $r = $n->get('/status');
    return $r->{body} =~ /Active connections: (\d+)/ ? $1 : -1;
}

sub wait_idle {
    my $deadline = time + 3;
    while (time < $deadline) {
        return 1 if active_connections() == 1;
        sleep 0.05;
    }
    return 0;
}

sub calls { $t->commandstats->{evalsha} // 0 }

# each case: the request, the body, the number of script calls it makes

for my $case (
    ['two mirrors', '/two-mirrors.html?key=a', "main\n", qr{^/two-mirrors\.html\?key=a 200 }],
    ['mirror twice through an index redirect', '/redirect/?key=b', "index\n",
        qr{^/redirect/\?key=b 200 }],
    ['parallel SSI includes', '/page.shtml?key=c', 'AoneBtwoC',
        qr{^/page\.shtml\?key=c 200 }],
    )
{
    my ($name, $uri, $body, $log) = @$case;

    my $before = calls();
    my $r = RRL::Test::http($port, 'GET', $uri, timeout => 2);
    is($r->{status}, 200, "$name: 200");
    is($r->{body}, $body, "$name: body");
    is($r->{error}, undef, "$name: the server closed the connection");
    ok(wait_access($log, 3), "$name: the access log line is written");
    ok(wait_idle(), "$name: no connection left behind");
    is(calls() - $before, 1, "$name: limited once, one script call");
}

# the first include is rejected by its call, the second waited for it; each
# ends (the request was limited once: the waiter goes on)

$t->redis('FLUSHALL');
my $r = $n->get('/incslow/1?key=d');
is($r->{status}, 200, 'the key of "one" used up');

$r = RRL::Test::http($port, 'GET', '/slow.shtml?key=d', timeout => 2);
is($r->{status}, 200, 'rejected include: the page is sent');
like($r->{body}, qr/^A.*429.*Btwo/s,
    'rejected include: the first shows the rejection, the waiter its file');
is($r->{error}, undef, 'rejected include: the server closed the connection');
ok(wait_access(qr{^/slow\.shtml\?key=d 200 }, 3),
    'rejected include: the access log line is written');
ok(wait_idle(), 'rejected include: no connection left behind');

# many of them at once, with Redis paused while they wait

$t->signal_redis('STOP');
my @s = map { RRL::Test::http_send($port, 'GET', "/two-mirrors.html?key=p$_") } 1 .. 20;
sleep 0.3;
$t->signal_redis('CONT');
my @res = map { RRL::Test::http_read($_, timeout => 3) } @s;
is(scalar(grep { ($_->{status} // 0) == 200 && !defined $_->{error} } @res), 20,
    'paused Redis: 20 requests with two mirrors each end');
ok(wait_idle(), 'paused Redis: no connection left behind');
my $logged = () = access_lines(qr{^/two-mirrors\.html\?key=p\d+ 200 });
is($logged, 20, 'paused Redis: 20 access log lines');

$t->done_testing;
