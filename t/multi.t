#!/usr/bin/perl

# Several redis_ratelimit lines on a request: all or nothing (a request
# rejected by one limit consumes from none), the headers of the most
# restrictive limit, and inheritance of the lines between levels.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use POSIX qw(ceil);
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;

my $n = $t->start_nginx(<<'EOF');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_a zone=A rate=5r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_b zone=B rate=2r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_h zone=H rate=4r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_d zone=D rate=2r/d algorithm=fixed_window;

    redis_ratelimit zone=H;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        add_header X-RL-Status $redis_ratelimit_status always;

        location /both/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=A;
            redis_ratelimit zone=B;
        }

        location /tie/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=B;
            redis_ratelimit zone=D;
        }

        location /http/ {
            alias %%TESTDIR%%/html/;
        }
    }

    server {
        listen 127.0.0.1:%%PORT_1%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=A;

        location /inherit/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_status 503;
        }

        location /own/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=B;
        }

        location /nested/ {
            alias %%TESTDIR%%/html/;
            location /nested/deeper/ {
                alias %%TESTDIR%%/html/;
            }
        }
    }
}
EOF

my $HOUR = 3600;
my $wend = $t->wait_window($HOUR, 10);
my $w = $wend / $HOUR - 1;
my $dend = (int($t->redis_time / 86400) + 1) * 86400;

sub A { $t->redis('GET', "rrl:{A:$_[0]}:fw") }
sub B { $t->redis('GET', "rrl:{B:$_[0]}:fw") }

# a=x with b=y: B (2r/h) is the tighter; the third request is rejected by B

my $r = $n->get('/both/?a=x&b=y');
is($r->{status}, 200, 'both 1: 200');
is($r->{h}{'x-ratelimit-limit'}, 2, 'both 1: headers of the tighter limit B');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'both 1: B remaining 1');

$r = $n->get('/both/?a=x&b=y');
is($r->{status}, 200, 'both 2: 200');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'both 2: B remaining 0');

is(A('x'), "$w:2", 'A consumed twice');
is(B('y'), "$w:2", 'B consumed twice');

for my $i (3 .. 4) {
    $r = $n->get('/both/?a=x&b=y');
    is($r->{status}, 429, "both $i: rejected by B");
    is($r->{h}{'x-ratelimit-limit'}, 2, "both $i: headers of the rejecting limit");
    is($r->{h}{'x-ratelimit-remaining'}, 0, "both $i: remaining 0");
}

is(A('x'), "$w:2", 'rejected by B: nothing consumed from A');
is(B('y'), "$w:2", 'rejected by B: nothing consumed from B');

# both 4 is the deny cache's (B's rejection of both 3)
is(scalar($n->grep_log(qr/limiting requests by zone "B", key "y", rate 2r\/h/)), 1,
    'the log names the rejecting zone B');
is(scalar($n->grep_log(qr/limiting requests by zone "B" \(cached\), key "y", rate 2r\/h/)), 1,
    'the log names the rejecting zone B, from the deny cache');

# A still has 3 left: three new b keys pass, with A's count going on

for my $b (qw(k1 k2 k3)) {
    $r = $n->get("/both/?a=x&b=$b");
    is($r->{status}, 200, "a=x b=$b: 200");
}
is($r->{h}{'x-ratelimit-limit'}, 5, 'A now the tighter (0 left): its headers');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'A remaining 0');
is(A('x'), "$w:5", 'A consumed 5 in total');

# rejected by A: the new B key is not consumed (not even created)

$r = $n->get('/both/?a=x&b=fresh');
is($r->{status}, 429, 'a=x b=fresh: rejected by A');
is($r->{h}{'x-ratelimit-limit'}, 5, 'rejected by A: headers of A');
is(B('fresh'), '', 'rejected by A: B key not created');
is(A('x'), "$w:5", 'rejected by A: A unchanged');

# only one key set: the other limit does not apply

$r = $n->get('/both/?b=only');
is($r->{status}, 200, 'only b: 200');
is($r->{h}{'x-ratelimit-limit'}, 2, 'only b: B headers');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'only b: B remaining');
is(A(''), '', 'only b: no A key for an empty key');

# ties on remaining: the limit that takes longest to recover (2r/d) is shown

$r = $n->get('/tie/?b=t&d=t');
is($r->{status}, 200, 'tie: 200');
is($r->{h}{'x-ratelimit-remaining'}, 1, 'tie: remaining 1');
is($r->{h}{'x-ratelimit-reset'}, $dend, 'tie: Reset of the daily limit');

$r = $n->get('/tie/?b=t&d=t');
is($r->{status}, 200, 'tie 2: 200, both exhausted now');

# rejected by both: Retry-After is the longest wait (the end of the day)
my $t0 = $t->redis_time;
$r = $n->get('/tie/?b=t&d=t');
my $t1 = $t->redis_time;
is($r->{status}, 429, 'tie 3: rejected by both');
is($r->{h}{'x-ratelimit-reset'}, $dend, 'tie 3: Reset of the daily limit');
my $ra = $r->{h}{'retry-after'} // 0;
ok($ra >= ceil($dend - $t1) && $ra <= ceil($dend - $t0),
    "tie 3: Retry-After waits for the daily limit ($ra s)");
is(scalar($n->grep_log(qr/limiting requests by zone "D", key "t", rate 2r\/d, retry after \Q$ra\Es/)), 1,
    'tie 3: the log names the limit with the longest wait');

# the http level line (zone H) is inherited by server 1's locations

for my $i (1 .. 5) {
    $r = $n->get('/http/?h=q');
    is($r->{status}, $i <= 4 ? 200 : 429, "http-level line, request $i");
}
is($t->redis('GET', 'rrl:{H:q}:fw'), "$w:4", 'http-level line: Redis state');

# a location with lines of its own does not inherit: /both/ ignores H
$r = $n->get('/both/?h=q&a=z');
is($r->{status}, 200, 'own lines: the exhausted http-level key does not apply');

# server 2: its server-level line replaces the http one

$r = $n->get('/inherit/?a=s2&h=other', port => 1);
is($r->{status}, 200, 'inherit: 200');
is($r->{h}{'x-ratelimit-limit'}, 5, 'inherit: the server line (A) applies');
is($r->{h}{'x-ratelimit-remaining'}, 4, 'inherit: A remaining 4');
is($t->redis('GET', 'rrl:{H:other}:fw'), '', 'inherit: the http line does not');

# a location with its own lines does not inherit the server's
for my $i (1 .. 3) {
    $r = $n->get('/own/?a=s2&b=s2', port => 1);
    is($r->{status}, $i <= 2 ? 200 : 429, "own lines, request $i");
    is($r->{h}{'x-ratelimit-limit'}, 2, "own lines, request $i: B headers only");
}
is(A('s2'), "$w:1", 'own lines: A not consumed');
is(B('s2'), "$w:2", 'own lines: B consumed');

# nested locations inherit through every level
for my $i (1 .. 4) {
    $r = $n->get('/nested/deeper/?a=s2', port => 1);
    is($r->{status}, 200, "nested $i: 200");
}
$r = $n->get('/nested/deeper/?a=s2', port => 1);
is($r->{status}, 429, 'nested 5: rejected by the inherited server line');
$r = $n->get('/inherit/?a=s2', port => 1);
is($r->{status}, 503, 'inherit: its own status, the inherited line');

$t->done_testing;
