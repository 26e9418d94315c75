#!/usr/bin/perl

# Every configuration the documentation shows is run, so that an example
# cannot rot: the ```nginx blocks of README.md and of
# docs/ngx_http_redis_ratelimit_module.md, and the redis_ratelimit_server
# settings of the README's "Managed Redis" table, are read from the files
# at test time.
#
# - Each goes through nginx -t. A whole configuration (one with "http {")
#   is run as written; a fragment is placed by its top-level statements:
#   "location" blocks into a server, everything else at the http level (a
#   first line "# context: http|server|location" would override that).
#   The test's own changes, and only these: the load_module line is the
#   built module's (its file name must be the one written); a
#   redis_ratelimit_server of one address names the test's Redis (the
#   seeds and Sentinels of several addresses are kept: nginx -t reads them
#   as written); "listen" is a free loopback port; a log file's directory
#   is the test's; a proxy_pass host is an upstream of a backend nginx; a
#   fragment without redis_ratelimit_server gets one; tls_ca=, tls_cert=
#   and tls_key= name certificates made here. With a module built without
#   TLS, a configuration with "tls" must fail with exactly the message
#   saying so; every other must pass.
# - The blocks that show behaviour are run with requests: the quick start
#   (10 requests a second per client address: the 11th of one address in
#   a second is rejected, another address still passes) and the
#   allow-list of the "Realistic" configuration (sent from 127.0.0.1,
#   127.0.0.2 and, allow-listed in the test's copy, 127.0.0.3: two client
#   addresses get two keys in Redis and their own limits, the allow-listed
#   one none).
#   A block with several redis_ratelimit_server lines shows alternatives:
#   each is run alone.
# - The live overrides' redis-cli lines, run by bash against the test's
#   Redis, each followed by a request that must show it (a rate's limit,
#   unlimited, block, the zone's rate once deleted; the hashed key's
#   example with a key of 200 bytes).
# - The smoothing example (delay=2 on gcra burst=10): of 12 requests at
#   once, 3 pass at once, 8 wait their turn 100 ms apart, 1 is rejected.
# - A fenced block that holds configuration lines but is not tagged nginx
#   fails: it would not be run.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use File::Basename qw(basename);
use IO::Socket::INET;
use Test::More;
use Text::ParseWords qw(shellwords);

use RRL::Test;
use RRL::Tls;

my $t = RRL::Test->new;
$t->start_redis;

my $repo = "$FindBin::Bin/..";
my @docs = ('README.md', 'docs/ngx_http_redis_ratelimit_module.md');
my $tls_built = RRL::Test::hiredis_major() >= 1;

# a backend for proxy_pass, without limits
my $backend = $t->start_nginx(<<'EOF');
http {
    server {
        listen 127.0.0.1:%%PORT%%;
        location / {
            return 200 "OK\n";
        }
    }
}
EOF
my $backend_port = $backend->port;

############################################################################
# reading the documents

sub read_doc {
    my ($name) = @_;
    open my $fh, '<', "$repo/$name" or die "$repo/$name: $!";
    local $/;
    return scalar <$fh>;
}

# fenced blocks: {doc, line, lang, heading, text}
sub blocks {
    my ($doc) = @_;
    my @lines = split /\n/, read_doc($doc), -1;
    my ($heading, @blocks, $cur) = ('');
    for my $i (0 .. $#lines) {
        my $l = $lines[$i];
        if ($cur) {
            if ($l =~ /^\s*```\s*$/) { push @blocks, $cur; undef $cur; }
            else { $cur->{text} .= ($l =~ s/^\Q$cur->{indent}\E//r) . "\n"; }
            next;
        }
        if ($l =~ /^(\s*)```\s*(\S*)\s*$/) {
            $cur = { doc => $doc, line => $i + 1, lang => $2, indent => $1,
                heading => $heading, text => '' };
            next;
        }
        $heading = $1 if $l =~ /^#+\s+(.*)/;
    }
    return @blocks;
}

# the redis_ratelimit_server settings of the Managed Redis table: the first
# `...` of each row's second cell, and the same with the other `...` of the
# row that are only name=value words (the files a row says to add)
sub managed_rows {
    my ($section) = read_doc('README.md') =~ /^## Managed Redis\n(.*?)^## /ms;
    my @rows;
    for my $row (split /\n/, $section // '') {
        my (undef, $service, $cell) = split /\s*\|\s*/, $row;
        next unless defined $cell && $cell =~ /`/ && $service ne 'service';
        my @spans = $cell =~ /`([^`]+)`/g;
        my $first = shift @spans;
        next if $first =~ /^redis_ratelimit_server$/;
        push @rows, [$service, $first];
        my @more = grep { /^(\s*[a-z_]+=\S+)+\s*$/ } @spans;
        push @rows, ["$service, with @more", join(' ', $first, @more)] if @more;
    }
    return @rows;
}

############################################################################
# placing a block into a configuration

# top-level statements of a fragment: each "name ... ;" or "name ... { ... }"
sub statements {
    my ($text) = @_;
    my @st;
    my ($cur, $depth, $q) = ('', 0, '');
    my @c = split //, $text;
    for (my $i = 0; $i < @c; $i++) {
        my $ch = $c[$i];
        if ($q) {
            $cur .= $ch;
            if ($ch eq '\\') { $cur .= $c[++$i] // ''; next; }
            $q = '' if $ch eq $q;
            next;
        }
        # a comment, where a word may start: to the end of the line
        if ($ch eq '#' && ($cur eq '' || $cur =~ /\s\z/)) {
            $i++ while $i + 1 < @c && $c[$i + 1] ne "\n";
            next;
        }
        $cur .= $ch;
        if ($ch eq '"' || $ch eq "'") { $q = $ch; next; }
        if ($ch eq '{') { $depth++; next; }
        if ($ch eq '}' || ($ch eq ';' && $depth == 0)) {
            $depth-- if $ch eq '}';
            if ($depth == 0) {
                $cur =~ s/^\s+//;
                push @st, $cur;
                $cur = '';
            }
        }
    }
    die "unbalanced block: $cur" if $depth || $cur =~ /\S/;
    return @st;
}

# the configuration nginx -t and the behaviour runs see; the context found
sub configuration {
    my ($text) = @_;
    my $module = basename(RRL::Test::module_path());
    my $context;

    if ($text =~ /^\s*http\s*\{/m) {
        $context = 'a whole configuration';
        if ($text =~ s/^\s*load_module\s+(\S+);\s*\n//m) {
            my $named = $1;
            is(basename($named), $module, "load_module names $module")
                or return;
        }
    } else {
        my ($forced) = $text =~ /\A\s*# context: (http|server|location)\b/;
        my (@http, @loc);
        for my $st (statements($text)) {
            my ($name) = $st =~ /^(\S+)/;
            if (($forced // '') eq 'http' || (!$forced && $name ne 'location')) {
                push @http, $st;
            } else {
                push @loc, $st;
            }
        }
        if (($forced // '') eq 'location') {
            @loc = ("location / {\n" . join("\n", @loc) . "\n}");
        }
        $context = @loc ? 'a fragment: http, and a server for its locations'
            : 'a fragment: http';
        $text = "http {\n" . join("\n", @http) . "\n"
            . (@loc ? "server {\n" . join("\n", @loc) . "\n}\n" : '') . "}\n";
    }

    # the test's Redis for one address
    $text =~ s{^(\s*redis_ratelimit_server\s+)([^;]*)}{
        my ($d, $rest) = ($1, $2);
        my @addr = grep { !/=/ && $_ ne 'cluster' && $_ ne 'tls' }
            split ' ', $rest;
        $rest =~ s/^\S+/127.0.0.1:%%REDIS_PORT%%/ if @addr == 1;
        "$d$rest"
    }gme;
    $text =~ s/^(\s*http\s*\{[^\n]*\n)/$1redis_ratelimit_server 127.0.0.1:%%REDIS_PORT%%;\n/m
        unless $text =~ /\bredis_ratelimit_server\s/;

    # a free port for each server's listen
    my $n = 0;
    $text =~ s/^(\s*)listen\s+[^;]*;/$1 . 'listen 127.0.0.1:%%PORT' . ($n++ ? "_$n" : '') . '%%;'/gme;
    $text =~ s{(\bserver\s*\{)(?![^{}]*\blisten\s)}{"$1\nlisten 127.0.0.1:%%PORT" . ($n++ ? "_$n" : '') . "%%;"}ge;

    # log files in the test's directory
    $text =~ s{\b((?:access|error)_log\s+)/\S*/([^/\s;]+)}{$1%%NGINX_DIR%%/$2}g;

    # proxy_pass hosts: upstreams of the backend
    my %hosts = map { $_ => 1 } $text =~ m{\bproxy_pass\s+https?://([A-Za-z_][\w.-]*)}g;
    delete $hosts{$_} for $text =~ /\bupstream\s+(\S+)\s*\{/g;
    my $ups = join '', map { "upstream $_ { server 127.0.0.1:$backend_port; }\n" }
        sort keys %hosts;
    $text =~ s/\}\s*\z/$ups}\n/ if $ups;

    # certificates made here
    if ($tls_built) {
        my $c = certificates();
        $text =~ s{\btls_ca=\S+?(?=[\s;])}{tls_ca=$c->{ca}}g;
        $text =~ s{\btls_cert=\S+?(?=[\s;])}{tls_cert=$c->{cert}}g;
        $text =~ s{\btls_key=\S+?(?=[\s;])}{tls_key=$c->{key}}g;
    }

    return ($text, $context);
}

my $certs;

sub certificates {
    return $certs if $certs;
    my $ca = RRL::Tls::ca($t, 'ca');
    my $client = RRL::Tls::cert($t, $ca, 'client', client => 1);
    return $certs = { ca => $ca->{cert}, cert => $client->{cert},
        key => $client->{key} };
}

my $no_tls = '"tls" in "redis_ratelimit_server" directive needs a module '
    . 'built with hiredis >= 1.0 with TLS (hiredis_ssl); this one was built '
    . 'without it';

# nginx -t: passes, or, with "tls" on a module without it, says so
sub checked {
    my ($name, $text) = @_;
    my ($conf, $context) = configuration($text);
    return unless defined $conf;
    my ($out, $rc) = $t->nginx_t($conf);
    if (!$tls_built && $conf =~ /\bredis_ratelimit_server\s[^;]*\btls\b(?!_)/) {
        isnt($rc, 0, "$name ($context): nginx -t refuses tls without it");
        like($out, qr/\[emerg\] \Q$no_tls\E in /, "$name: the message")
            or diag($out);
        return;
    }
    is($rc, 0, "$name ($context): nginx -t passes")
        or diag("$out\n--- the configuration tested:\n$conf");
}

############################################################################
# nginx -t on every example

my @nginx;
for my $doc (@docs) {
    for my $b (blocks($doc)) {
        my $where = "$b->{doc}:$b->{line} ($b->{heading})";
        if ($b->{lang} eq 'nginx') {
            push @nginx, $b;
            my @servers = $b->{text} =~ /^\s*(redis_ratelimit_server\s[^;]*;)/mg;
            if (@servers < 2) {
                checked($where, $b->{text});
                next;
            }
            # several redis_ratelimit_server lines: alternatives, each alone
            for my $i (0 .. $#servers) {
                my $k = 0;
                (my $one = $b->{text}) =~
                    s/^\s*redis_ratelimit_server\s[^;]*;/$k++ == $i ? $& : ''/mge;
                checked("$where, server line " . ($i + 1), $one);
            }
            next;
        }
        # configuration lines in a block that is not tagged nginx
        my @conf = grep { /^\s*redis_ratelimit\w*\s[^:]*;\s*$/ && !/Syntax:/ }
            split /\n/, $b->{text};
        ok(!@conf || $b->{text} =~ /^Syntax:/m,
            "$where: configuration only in ```nginx blocks") or diag(@conf);
    }
}
cmp_ok(scalar(@nginx), '>=', 8, 'the documents have their nginx blocks');

my @managed = managed_rows();
cmp_ok(scalar(@managed), '>=', 6, 'the Managed Redis table has its rows');
for my $row (@managed) {
    checked("README.md, Managed Redis, $row->[0]",
        "redis_ratelimit_server $row->[1];\n");
}

############################################################################
# behaviour

# the one nginx block of README.md that matches
sub block_of {
    my ($name, $re) = @_;
    my @b = grep { $_->{doc} eq 'README.md' && $_->{text} =~ $re } @nginx;
    is(scalar(@b), 1, "$name: one block of README.md") or return;
    return $b[0]{text};
}

# GET from a loopback source address
sub get_from {
    my ($inst, $src, $uri) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
        PeerPort => $inst->port, LocalAddr => $src, Proto => 'tcp',
        Timeout => 5) or return { status => 'none', h => {} };
    binmode $s;
    print $s RRL::Test::http_request_text('GET', $uri);
    return RRL::Test::http_read($s);
}

sub printable {
    my ($s) = @_;
    $s =~ s/([^\x21-\x7e])/sprintf('\\x%02x', ord $1)/ge;
    return $s;
}

sub statuses {
    my ($inst, $src, $uri, $n) = @_;
    return join ' ', map { get_from($inst, $src, $uri)->{status} } 1 .. $n;
}

# "STATUS X-RateLimit-Limit" of a request of an API key ("-": none)
sub shown {
    my ($inst, $key) = @_;
    my $r = $inst->get('/', headers => { 'X-Api-Key' => $key });
    return join ' ', $r->{status} // 'none', $r->{h}{'x-ratelimit-limit'} // '-';
}

# the quick start: 10 requests a second per client address
if (defined(my $text = block_of('quick start', qr/zone=per_ip rate=10r\/s;/))) {
    my ($conf) = configuration($text);
    my $n = $t->start_nginx($conf);
    $t->wait_window(1, 0.8);
    is(statuses($n, '127.0.0.1', '/api/', 11), join(' ', (200) x 10, 429),
        'quick start: 10 requests of one address pass, the 11th is rejected');
    is(statuses($n, '127.0.0.2', '/api/', 1), '200',
        'quick start: another address has its own limit');
    $n->stop;
}

# smoothing: of 12 requests at once, 1 + 2 pass at once, the next 8 wait
# their turn, 100 ms apart, the 12th is rejected
if (defined(my $text = block_of('smoothing', qr/zone=smooth\b/))) {
    my ($conf) = configuration($text);
    my $n = $t->start_nginx($conf);
    my @r = $n->parallel(('/fragile/') x 12);
    my @passed = sort { $a <=> $b } map { $_->{time} } grep { ($_->{status} // 0) == 200 } @r;
    is(join(' ', sort map { $_->{status} // 'none' } @r), join(' ', (200) x 11, 429),
        'smoothing: 11 of 12 requests at once pass, 1 is rejected');
    cmp_ok($passed[2] // 9, '<', 0.08, 'smoothing: 3 pass at once');
    cmp_ok($passed[3] // 0, '>=', 0.095, 'smoothing: the 4th waits a turn');
    ok(($passed[10] // 0) >= 0.795 && ($passed[10] // 9) < 1.5,
        'smoothing: the 11th waits 8 turns of 100 ms')
        or diag("times: @passed");
    $n->stop;
}

# live overrides: each redis-cli line of the README's example, run by bash
# (its redis-cli reaching the test's Redis), then a request of its key;
# the hashed key's example with a key of 200 bytes
if (defined(my $text = block_of('overrides', qr/\boverrides=on\b/))) {
    my ($rate) = $text =~ /\brate=(\d+)r\//;
    my $n = $t->start_nginx((configuration($text
        . "location / { root %%TESTDIR%%/html; redis_ratelimit zone=api; }\n"))[0]);
    my $cli = RRL::Test::which(RRL::Test::redis_cli_binary());
    my $bin = $t->write_file('bin/redis-cli', "#!/bin/sh\nexec $cli -h 127.0.0.1 "
        . "-p " . $t->redis_port . " \"\$@\"\n");
    chmod 0755, $bin;
    local $ENV{PATH} = $t->testdir . "/bin:$ENV{PATH}";

    my @sh = grep { $_->{doc} eq 'README.md' && $_->{lang} eq 'sh'
        && $_->{heading} eq 'Live overrides' } blocks('README.md');
    is(scalar(@sh), 2, 'overrides: two sh blocks');

    for my $line (grep { /\S/ && !/^\s*#/ } split /\n/, $sh[0]{text} // '') {
        my $out = RRL::Test::run_command('bash', '-c', $line);
        is($?, 0, "overrides: $line: runs") or diag($out);
        my ($key) = $line =~ /rrl:\{api:([^}]*)\}:limit/ or next;
        my @w = shellwords($line);
        next unless $w[1] =~ /^(SET|DEL)$/;
        my $value = $w[1] eq 'DEL' ? 'deleted' : $w[3];
        my $want = $value eq 'unlimited' ? '200 -'
            : $value eq 'block' ? '429 0'
            : $value eq 'deleted' ? "200 $rate"
            : $value =~ /^(\d+)r\/\S+(?:\s+burst=(\d+))?$/ ? '200 ' . ($1 + ($2 // 0))
            : '?';
        is(shown($n, $key), $want, "overrides: $line: a request of $key shows it");
    }

    my $long = 'k' x 200;
    (my $hashed = $sh[1]{text} // '') =~ s/^KEY='[^']*'/KEY='$long'/m;
    my $out = RRL::Test::run_command('bash', '-c', $hashed);
    is($?, 0, 'overrides: the hashed key\'s example runs') or diag($out);
    is(shown($n, $long), '200 -', 'overrides: a key of 200 bytes, unlimited');
    is(scalar($n->grep_log(qr/invalid override/)), 0, 'overrides: none invalid');
    $n->stop;
}

# the allow-list: one key per client address, none for the allow-listed
if (defined(my $text = block_of('allow-list', qr/\bgeo\b/))) {
    my ($password) = $text =~ /\bpassword=(\S+?)[\s;]/;
    my ($db) = $text =~ /\bdb=(\d+)/;
    ok(defined $password && defined $db, 'allow-list: password= and db= read');

    # 127.0.0.3 allow-listed as 10.0.0.0/8 is
    ok($text =~ s{^(\s*)10\.0\.0\.0/8(\s+\S+;)}{$1 10.0.0.0/8$2\n$1 127.0.0.3/32$2}m,
        'allow-list: 127.0.0.3 added to the allow-list of the copy');

    $t->stop_redis;
    $t->start_redis(password => $password);
    my ($conf) = configuration($text);
    my $n = $t->start_nginx($conf);
    my $per_ip = ($conf =~ /zone=per_ip\s+rate=(\d+)r\/s/)[0];
    is($per_ip, 20, 'allow-list: per_ip is 20r/s');

    $t->wait_window(1, 0.8);
    is(statuses($n, '127.0.0.1', '/api/', 21), join(' ', (200) x 20, 429),
        'allow-list: 127.0.0.1 gets its 20 a second, then 429');
    is(statuses($n, '127.0.0.2', '/api/', 2), '200 200',
        'allow-list: 127.0.0.2 has a limit of its own');
    is(statuses($n, '127.0.0.3', '/api/', 25), join(' ', (200) x 25),
        'allow-list: 127.0.0.3, allow-listed, is not limited by per_ip');

    # the keys' bytes, \xNN for the others than printable ASCII (redis-cli
    # would cut a key at its first NUL)
    my @keys = sort grep { length } $t->redis_db($db, 'EVAL',
        q{local r = {}
          for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
              r[#r + 1] = (string.gsub(k, '[^!-~]', function(c)
                  return string.char(92) .. string.format('x%02x', c:byte()) end))
          end
          return r}, 0, 'rrl:{per_ip:*');
    my @want = map { 'rrl:{per_ip:' . printable(pack('C4', 127, 0, 0, $_)) . '}:sw' } 1, 2;
    is(join(', ', @keys), join(', ', @want),
        'allow-list: one key per client address, none for the allow-listed one');
    $n->stop;
}

$t->done_testing;
