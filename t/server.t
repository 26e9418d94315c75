#!/usr/bin/perl

# redis_ratelimit_server options: password=, db=, a unix: socket, timeout=;
# a wrong password fails (open) with the reason logged.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis(password => 'sekret');

my $conf = <<'EOF2';
http {
    redis_ratelimit_server %%SERVER%%;
    redis_ratelimit_zone $arg_key zone=sv rate=5r/h algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;
        redis_ratelimit zone=sv;
        location / {
        }
    }
}
EOF2

sub conf {
    my ($server) = @_;
    (my $c = $conf) =~ s/%%SERVER%%/$server/;
    return $c;
}

my $tcp = $t->start_nginx(conf('127.0.0.1:%%REDIS_PORT%% password=sekret db=3 timeout=300ms'));
my $unix = $t->start_nginx(conf('unix:%%REDIS_SOCKET%% password=sekret db=3'));
my $wrong = $t->start_nginx(conf('127.0.0.1:%%REDIS_PORT%% password=wrong'));

my $P = 3600;
my $w = $t->wait_window($P, 10) / $P - 1;

my $r = $tcp->get('/?key=a');
is($r->{h}{'x-rl-status'}, 'PASSED', 'password and db over TCP: PASSED');
is($r->{h}{'x-ratelimit-remaining'}, 4, 'TCP: Remaining 4');
is($t->redis_db(3, 'GET', 'rrl:{sv:a}:fw'), "$w:1", 'the key is in db 3');
is($t->redis_db(0, 'EXISTS', 'rrl:{sv:a}:fw'), 0, 'not in db 0');

$r = $unix->get('/?key=a');
is($r->{h}{'x-rl-status'}, 'PASSED', 'unix socket: PASSED');
is($r->{h}{'x-ratelimit-remaining'}, 3, 'unix socket: the same counter');
is($t->redis_db(3, 'GET', 'rrl:{sv:a}:fw'), "$w:2", 'db 3 counts both');

my @clients = grep { /name=nginx-redis-ratelimit/ } $t->redis('CLIENT', 'LIST');
is(scalar(grep { /db=3/ } @clients), 2, 'two clients on db 3');
is(scalar(grep { /db=3/ && /\bflags=U\b/ && /addr=\Q${\ $t->redis_socket }\E/ } @clients), 1,
    'one of them on the unix socket');

$r = $wrong->get('/?key=a');
is($r->{status}, 200, 'wrong password: 200 (fail open)');
is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'wrong password: FAILED_OPEN');
ok(scalar($wrong->grep_log(qr/\[error\] .*redis_ratelimit: AUTH on 127\.0\.0\.1:\d+ failed: WRONGPASS/)),
    'wrong password: AUTH failure logged');
is($t->redis_db(3, 'GET', 'rrl:{sv:a}:fw'), "$w:2", 'wrong password: nothing counted');

# timeout=300ms, on a hung Redis

$t->signal_redis('STOP');
$r = $tcp->get('/?key=a');
$t->signal_redis('CONT');

is($r->{h}{'x-rl-status'}, 'FAILED_OPEN', 'hung Redis: FAILED_OPEN');
ok($r->{time} >= 0.29 && $r->{time} < 1,
    sprintf('hung Redis: answered after the 300 ms timeout (%.3f s)', $r->{time}));
ok(scalar($tcp->grep_log(qr/failed: timed out after 300 ms/)), 'timeout logged');

$t->done_testing;
