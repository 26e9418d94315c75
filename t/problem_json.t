#!/usr/bin/perl

# redis_ratelimit_problem_json: on, a rejection's body is
# application/problem+json (RFC 9457) of the quota-exceeded type, naming
# the zones that rejected; it wins over an error_page for the status. Off
# (the default), the status goes to nginx: error_page applies as usual.
# With Redis down and "fail local", local rejections get the body too,
# and the draft headers show this server's share.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;

use RRL::Test;

my $t = RRL::Test->new;
$t->start_redis;
$t->write_file('html/limited.html', "slow down\n");

my $n = $t->start_nginx(<<'EOF2');
http {
    redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;
    redis_ratelimit_zone $arg_key zone=one rate=1r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key zone=two rate=1r/h algorithm=gcra;
    redis_ratelimit_zone $arg_key zone=wide rate=100r/h algorithm=fixed_window;
    redis_ratelimit_zone $arg_key 'zone=q"\\z' rate=1r/h algorithm=fixed_window;
    redis_ratelimit_deny_cache off;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=one;
        redis_ratelimit_problem_json on;

        location / {
        }
        location /two/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit zone=one;
            redis_ratelimit zone=wide;
            redis_ratelimit zone=two;
        }
        location /quoted/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit 'zone=q"\\z';
            redis_ratelimit_status 503;
        }
        location /with_error_page/ {
            alias %%TESTDIR%%/html/;
            error_page 429 /limited.html;
        }
        location /dry/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_dry_run on;
        }
        location /off/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_problem_json off;
            error_page 429 /limited.html;
        }
        location /off_plain/ {
            alias %%TESTDIR%%/html/;
            redis_ratelimit_problem_json off;
        }
        location = /limited.html {
        }
    }
}
EOF2

sub problem {
    my ($status, @zones) = @_;
    return '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",'
        . '"title":"Request cannot be satisfied as assigned quota has been exceeded",'
        . qq{"status":$status,"violated-policies":[}
        . join(',', map { qq{"$_"} } @zones) . "]}\n";
}

my $r = $n->get('/?key=a');
is($r->{status}, 200, 'pass: 200');
is($r->{body}, "OK\n", 'pass: the file');

$r = $n->get('/?key=a');
is($r->{status}, 429, 'rejected: 429');
is($r->{h}{'content-type'}, 'application/problem+json', 'rejected: problem+json');
is($r->{body}, problem(429, 'one'), 'rejected: the body');
is($r->{h}{'content-length'}, length($r->{body}), 'rejected: Content-Length');
cmp_ok($r->{h}{'retry-after'} // 0, '>=', 1, 'rejected: Retry-After');
is($r->{h}{'x-ratelimit-remaining'}, 0, 'rejected: the rate limit headers');

$r = $n->http('HEAD', '/?key=a');
is($r->{status}, 429, 'HEAD: 429');
is($r->{h}{'content-type'}, 'application/problem+json', 'HEAD: problem+json');
is($r->{body}, '', 'HEAD: no body');

# several limits: only the rejecting zones, in the request's order

$n->get('/two/?key=b');
$r = $n->get('/two/?key=b');
is($r->{body}, problem(429, 'one', 'two'), 'two rejecting zones, not the wide one');

$n->get('/?key=c');
$r = $n->get('/two/?key=c');
is($r->{body}, problem(429, 'one'), 'one of three rejects');

# the zone name JSON-escaped, the configured status

$n->get('/quoted/?key=d');
$r = $n->get('/quoted/?key=d');
is($r->{status}, 503, 'quoted: 503');
is($r->{body}, problem(503, 'q\\"\\\\z'), 'quoted: the name JSON-escaped, status 503');

# problem_json wins over an error_page for the status

$n->get('/with_error_page/?key=e');
$r = $n->get('/with_error_page/?key=e');
is($r->{status}, 429, 'problem_json and error_page: 429');
is($r->{body}, problem(429, 'one'), 'problem_json and error_page: problem_json wins');

# dry run: nothing rejected, no problem

$n->get('/dry/?key=f');
$r = $n->get('/dry/?key=f');
is($r->{status}, 200, 'dry run: 200');
is($r->{body}, "OK\n", 'dry run: the file');

# off: error_page applies, keeping the status and the headers

$n->get('/off/?key=g');
$r = $n->get('/off/?key=g');
is($r->{status}, 429, 'off, error_page: 429');
is($r->{body}, "slow down\n", 'off, error_page: its page');
like($r->{h}{'content-type'}, qr{^text/html}, 'off, error_page: text/html');
cmp_ok($r->{h}{'retry-after'} // 0, '>=', 1, 'off, error_page: Retry-After');

$n->get('/off_plain/?key=h');
$r = $n->get('/off_plain/?key=h');
is($r->{status}, 429, 'off: 429');
like($r->{body}, qr{<title>429 Too Many Requests</title>}, "off: nginx's page");

# Redis unreachable: fail local, a share of 1/2, both header sets

my $dead = RRL::Test::free_port();
(my $conf = <<'EOF2') =~ s/%%DEAD%%/$dead/;
http {
    redis_ratelimit_server 127.0.0.1:%%DEAD%% timeout=50ms;
    redis_ratelimit_zone $arg_key zone=loc rate=4r/d algorithm=fixed_window;

    server {
        listen 127.0.0.1:%%PORT%%;
        root %%TESTDIR%%/html;
        redis_ratelimit zone=loc;
        redis_ratelimit_fail local local_share=1/2;
        redis_ratelimit_headers both;
        redis_ratelimit_problem_json on;
        add_header X-Status $redis_ratelimit_status always;
        add_header X-Rtt "[$redis_ratelimit_rtt]" always;

        location / {
        }
    }
}
EOF2
my $d = $t->start_nginx($conf, wait_connected => 0);
$d->ignore_log(qr/\[error\]/);

for my $i (1 .. 2) {
    $r = $d->get('/?key=l');
    is($r->{status}, 200, "local $i: 200");
    is($r->{h}{'x-status'}, 'FAILED_LOCAL', "local $i: FAILED_LOCAL");
    is($r->{h}{'ratelimit-policy'}, '"loc";q=2;w=86400', "local $i: the share in q");
    like($r->{h}{ratelimit} // '', qr/^"loc";r=${\(2 - $i)};t=\d+$/, "local $i: RateLimit");
    is($r->{h}{'x-rtt'}, '[]', "local $i: no reply, no rtt");
}
$r = $d->get('/?key=l');
is($r->{status}, 429, 'local 3: 429');
is($r->{h}{'content-type'}, 'application/problem+json', 'local 3: problem+json');
is($r->{body}, problem(429, 'loc'), 'local 3: the body');
is($r->{h}{'x-ratelimit-limit'}, 2, 'local 3: X-RateLimit-Limit of the share');
my ($lt) = ($r->{h}{ratelimit} // '') =~ /^"loc";r=0;t=(\d+)$/;
is($r->{h}{'retry-after'}, $lt, 'local 3: Retry-After is t');

$t->done_testing;
