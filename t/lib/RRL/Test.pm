package RRL::Test;

# End-to-end test helper for ngx_http_redis_ratelimit_module, in the style
# of nginx-tests: each test file gets its own world-readable temporary
# directory, its own redis-server on a free port, and one or more real
# nginx instances (master + 1 worker, daemonized) built from config
# templates.
#
#   use lib 't/lib';
#   use RRL::Test;
#   my $t = RRL::Test->new;             # skip_all if the module or redis is missing
#   $t->start_redis;
#   my $n = $t->start_nginx(<<'EOF');   # placeholders: see expand()
#   http { server { listen 127.0.0.1:%%PORT%%; ... } }
#   EOF
#   my $r = $n->get('/?key=a');         # { status, h => {lc name => value}, ... }
#   $t->done_testing;                   # stops everything, checks error logs
#
# Environment: RRL_MODULE (the .so), RRL_NGINX (the nginx binary),
# RRL_NGINX_PRELOAD (LD_PRELOAD for nginx only, e.g. the ASan runtime),
# RRL_REDIS_SERVER (the server every helper starts: redis-server, or
# valkey-server; its cli is the same name with -cli for -server, or
# RRL_REDIS_CLI), RRL_TEST_KEEP=1 keeps the temporary directory.

use strict;
use warnings;

use Carp qw(croak);
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Path qw(make_path);
use File::Spec;
use File::Temp qw(tempdir);
use Fcntl qw(O_WRONLY O_CREAT O_EXCL);
use IO::Select;
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Scalar::Util ();
use Socket qw(SOL_SOCKET SO_LINGER);
use Test::More ();
use Time::HiRes qw(time sleep);

our $VERSION = '1.0';

my @instances;    # every RRL::Test alive, for END

my $REPO = abs_path(File::Spec->catdir(dirname(abs_path(__FILE__)),
    File::Spec->updir, File::Spec->updir, File::Spec->updir));


sub module_path {
    my $m = $ENV{RRL_MODULE}
        // "$REPO/build/ngx_http_redis_ratelimit_module.so";
    return -e $m ? abs_path($m) : $m;
}

sub nginx_binary { $ENV{RRL_NGINX} // '/usr/sbin/nginx' }

# RRL_NGINX_PRELOAD: a library preloaded into nginx only (the ASan runtime,
# when the module is built with sanitizers and nginx is not)
sub nginx_preload { $ENV{RRL_NGINX_PRELOAD} // $ENV{LD_PRELOAD} // '' }

# the server binary and its cli, for RRL::Test, RRL::Cluster and RRL::Sentinel
sub redis_server_binary { $ENV{RRL_REDIS_SERVER} // 'redis-server' }

sub redis_cli_binary {
    return $ENV{RRL_REDIS_CLI} if defined $ENV{RRL_REDIS_CLI};
    (my $cli = redis_server_binary()) =~ s/-server\z/-cli/;
    return $cli;
}

# hiredis' generation in the module (0 or 1): 1.x's reader linked in (its
# "Bad simple string value"), or its shared library
sub hiredis_major {
    my $m = module_path();
    return 1 if index(read_file($m), 'Bad simple string value') >= 0;
    my $ldd = run_command('ldd', $m);
    return $ldd =~ /libhiredis\.so\.(\d+)/ ? $1 + 0 : 0;
}

sub which {
    my ($prog) = @_;
    return -x $prog ? $prog : undef if $prog =~ m{/};
    for my $d (split /:/, $ENV{PATH} // '') {
        return "$d/$prog" if -x "$d/$prog";
    }
    return undef;
}


# a port nobody listens on now (the kernel's choice, so files run in parallel)

# never the same one twice in a test file: the kernel may hand a port just
# closed out again, and two servers of one instance would share it

my %given;

sub free_port {
    for (1 .. 100) {
        my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
            Proto => 'tcp', Listen => 1, ReuseAddr => 1)
            or croak "cannot bind a free port: $!";
        my $port = $s->sockport;
        close $s;
        next if $given{$port}++;
        next unless claim_port($port);
        return $port;
    }
    croak 'no free port not given already';
}

# Nor one that another test file holds: files run in parallel
# (scripts/e2e.sh), and a port is free between free_port() and its
# server's start, or while a test keeps its Redis stopped, or for good
# when it is a dead address: the kernel could hand it to another file. A
# file claims each port it is given in a directory that every file shares,
# until it ends; a claim whose process is gone is stale and taken over.

my $claims = File::Spec->catdir(File::Spec->tmpdir, 'rrl-test-ports');
my (@claimed, $claimer);

sub claim_port {
    my ($port) = @_;
    chmod 01777, $claims if mkdir $claims;    # every user's files
    my $f = "$claims/$port";
    for (1 .. 2) {
        if (sysopen(my $fh, $f, O_WRONLY | O_CREAT | O_EXCL, 0666)) {
            print $fh $$;
            close $fh;
            $claimer //= $$;
            push @claimed, $f;
            return 1;
        }
        my $pid = read_file($f);
        return 0 if $pid =~ /\A\d+\z/
            && ($pid == $$ || kill(0, $pid) || $!{EPERM});
        unlink $f;    # stale, or half written: once more
    }
    return 0;
}

END {
    unlink @claimed if defined $claimer && $claimer == $$;
}


sub new {
    my ($class, %opts) = @_;

    my $module = module_path();
    Test::More::plan(skip_all => "module not built: $module "
        . "(cmake --build build --target module, or set RRL_MODULE)")
        unless -f $module;
    Test::More::plan(skip_all => "nginx not found: " . nginx_binary()
        . " (set RRL_NGINX)")
        unless -x nginx_binary();
    for my $p (redis_server_binary(), redis_cli_binary()) {
        Test::More::plan(skip_all => "$p not found in PATH") unless which($p);
    }

    my $dir = tempdir('rrl-test-XXXXXX', TMPDIR => 1,
        CLEANUP => $ENV{RRL_TEST_KEEP} ? 0 : 1);
    chmod 0755, $dir;    # nginx workers run as nobody

    my $self = bless {
        dir => $dir,
        module => $module,
        nginx => [],
        redis_port => undef,
        redis_pid => undef,
        redis_args => [],
        redis_password => undef,
        owner => $$,
        nt => 0,
    }, $class;

    Test::More::diag("test dir: $dir") if $ENV{RRL_TEST_KEEP};

    $self->write_file('html/index.html', "OK\n");

    push @instances, $self;
    return $self;
}

sub testdir { $_[0]{dir} }
sub redis_port { $_[0]{redis_port} }
sub redis_socket { "$_[0]{dir}/redis/redis.sock" }

sub write_file {
    my ($self, $name, $content) = @_;
    my $path = "$self->{dir}/$name";
    my $d = dirname($path);
    unless (-d $d) {
        make_path($d);
        # every new level world-readable
        my $p = $d;
        while (length($p) > length($self->{dir})) {
            chmod 0755, $p;
            $p = dirname($p);
        }
    }
    open my $fh, '>', $path or croak "cannot write $path: $!";
    binmode $fh;
    print $fh $content;
    close $fh;
    chmod 0644, $path;
    return $path;
}

sub read_file {
    my ($path) = @_;
    open my $fh, '<', $path or return '';
    binmode $fh;
    local $/;
    my $c = <$fh>;
    close $fh;
    return $c // '';
}


############################################################################
# redis

# start_redis(password => 'x', args => [...]): the first call picks the port,
# later calls (after stop_redis) reuse it

sub start_redis {
    my ($self, %opts) = @_;

    croak 'redis-server is running already' if $self->{redis_pid};

    $self->{redis_port} //= free_port();
    $self->{redis_password} = $opts{password} if exists $opts{password};
    $self->{redis_args} = $opts{args} if $opts{args};

    my $rdir = "$self->{dir}/redis";
    unless (-d $rdir) {
        mkdir $rdir or croak "mkdir $rdir: $!";
    }
    chmod 0755, $rdir;

    my @cmd = (redis_server_binary(),
        '--port', $self->{redis_port},
        '--bind', '127.0.0.1',
        '--save', '',
        '--appendonly', 'no',
        '--dir', $rdir,
        '--daemonize', 'no',
        '--unixsocket', "$rdir/redis.sock",
        '--unixsocketperm', '777',
        '--logfile', "$rdir/redis.log",
        (defined $self->{redis_password}
            ? ('--requirepass', $self->{redis_password}) : ()),
        @{ $self->{redis_args} });

    my $pid = fork;
    croak "fork: $!" unless defined $pid;

    if ($pid == 0) {
        open STDIN, '<', '/dev/null';
        open STDOUT, '>>', "$rdir/redis.stdout";
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @cmd; }
        POSIX::_exit(127);
    }

    $self->{redis_pid} = $pid;

    my $deadline = time + 10;
    while (time < $deadline) {
        if (waitpid($pid, WNOHANG) == $pid) {
            $self->{redis_pid} = undef;
            croak "redis-server exited at start: "
                . read_file("$rdir/redis.log") . read_file("$rdir/redis.stdout");
        }
        my $pong = eval { $self->redis('PING') } // '';
        return $self if $pong eq 'PONG';
        sleep 0.02;
    }

    croak "redis-server did not answer PING on port $self->{redis_port}";
}

sub stop_redis {
    my ($self) = @_;
    my $pid = $self->{redis_pid} or return;

    kill 'TERM', $pid;
    my $deadline = time + 10;
    while (time < $deadline) {
        last if waitpid($pid, WNOHANG) == $pid;
        sleep 0.01;
    }
    if (kill 0, $pid) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }

    $self->{redis_pid} = undef;

    # the port must be free for a restart on the same one
    $deadline = time + 5;
    while (time < $deadline) {
        my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
            PeerPort => $self->{redis_port}, Proto => 'tcp');
        last unless $s;
        close $s;
        sleep 0.01;
    }

    return $self;
}

sub redis_running { defined $_[0]{redis_pid} }

# SIGSTOP/SIGCONT: a Redis that hangs without closing its connections
sub signal_redis {
    my ($self, $sig) = @_;
    kill $sig, $self->{redis_pid} or croak "kill $sig redis: $!";
}

sub redis_cli_cmd {
    my ($self, $db) = @_;
    return (redis_cli_binary(), '-h', '127.0.0.1', '-p', $self->{redis_port},
        (defined $self->{redis_password}
            ? ('-a', $self->{redis_password}, '--no-auth-warning') : ()),
        (defined $db ? ('-n', $db) : ()),
        '--raw');
}

# redis(@args): runs redis-cli; the output, trailing newline removed, in
# scalar context; its lines in list context. A nil reply is ''.

sub redis {
    my ($self, @args) = @_;
    return $self->redis_db(undef, @args);
}

sub redis_db {
    my ($self, $db, @args) = @_;
    croak 'no redis port' unless $self->{redis_port};
    return run_command($self->redis_cli_cmd($db), @args);
}

# run_command(@argv): runs a program (no shell), its stderr merged into
# its stdout; the output, trailing newline removed, in scalar context; its
# lines in list context. $? is the program's exit status afterwards.
# Every redis-cli of RRL::Test, RRL::Cluster and RRL::Sentinel runs here.

sub run_command {
    my (@cmd) = @_;
    my $pid = open(my $fh, '-|') // croak "fork: $!";
    if ($pid == 0) {
        open STDERR, '>&', \*STDOUT;
        { no warnings q(exec); exec @cmd; }
        POSIX::_exit(127);
    }
    binmode $fh;
    local $/;
    my $out = <$fh> // '';
    close $fh;
    $out =~ s/\n\z//;
    return wantarray ? split(/\n/, $out) : $out;
}

# Redis's clock, the one the script uses, as float seconds
sub redis_time {
    my ($self) = @_;
    my ($s, $us) = $self->redis('TIME');
    croak "bad TIME reply" unless defined $us && $s =~ /^\d+$/;
    return $s + $us / 1e6;
}

# Makes sure at least $min_left seconds remain in the current fixed window
# of $period seconds (windows aligned on the Unix epoch), sleeping into the
# next window if needed. Returns the current window's end.

sub wait_window {
    my ($self, $period, $min_left) = @_;
    $min_left //= 3;
    my $now = $self->redis_time;
    my $left = $period - ($now - int($now / $period) * $period);
    if ($left < $min_left) {
        sleep($left + 0.05);
        $now = $self->redis_time;
    }
    return (int($now / $period) + 1) * $period;
}


############################################################################
# nginx

sub globals {
    my ($self, $ndir, %opts) = @_;
    my $g = '';
    $g .= "load_module $self->{module};\n" unless $opts{no_module};
    $g .= "daemon on;\n" unless $opts{template} =~ /^\s*daemon\s/m;
    $g .= "master_process on;\n" unless $opts{template} =~ /^\s*master_process\s/m;
    $g .= "worker_processes 1;\n"
        unless $opts{template} =~ /^\s*worker_processes\s/m;
    $g .= "pid $ndir/nginx.pid;\n";
    $g .= "error_log $ndir/error.log info;\n";
    $g .= "events { worker_connections 1024; }\n"
        unless $opts{template} =~ /^\s*events\s*\{/m;
    return $g;
}

sub globals_http {
    my ($self, $ndir) = @_;
    return "access_log $ndir/access.log;\n"
        . "client_body_temp_path $ndir/client_body_temp;\n"
        . "proxy_temp_path $ndir/proxy_temp;\n"
        . "fastcgi_temp_path $ndir/fastcgi_temp;\n"
        . "uwsgi_temp_path $ndir/uwsgi_temp;\n"
        . "scgi_temp_path $ndir/scgi_temp;\n";
}

# Placeholders: %%TEST_GLOBALS%% (load_module, daemon, pid, error_log,
# events; put at the top when absent), %%TEST_GLOBALS_HTTP%% (access_log and
# temp paths; put at the start of the http block when absent), %%MODULE%%,
# %%REDIS_PORT%%, %%REDIS_SOCKET%%, %%PORT%% and %%PORT_<n>%% (free ports of
# this instance), %%TESTDIR%% (shared by the file's instances; html/ has an
# index.html), %%NGINX_DIR%% (this instance's own directory).

sub expand {
    my ($self, $template, $ndir, $ports, %opts) = @_;
    my $c = $template;

    my $g = $self->globals($ndir, %opts, template => $template);
    my $gh = $self->globals_http($ndir);

    $c = "%%TEST_GLOBALS%%\n" . $c unless $c =~ /%%TEST_GLOBALS%%/;
    $c =~ s/^(\s*http\s*\{[^\n]*\n)/$1%%TEST_GLOBALS_HTTP%%\n/m
        unless $c =~ /%%TEST_GLOBALS_HTTP%%/;

    $c =~ s/%%TEST_GLOBALS%%\n?/$g/g;
    $c =~ s/%%TEST_GLOBALS_HTTP%%\n?/$gh/g;
    $c =~ s/%%MODULE%%/$self->{module}/g;
    my $rp = $self->{redis_port} // 6379;
    $c =~ s/%%REDIS_PORT%%/$rp/g;
    my $rs = $self->redis_socket;
    $c =~ s/%%REDIS_SOCKET%%/$rs/g;
    $c =~ s/%%TESTDIR%%/$self->{dir}/g;
    $c =~ s/%%NGINX_DIR%%/$ndir/g;
    $c =~ s{%%PORT(?:_(\d+))?%%}{$ports->{$1 // 0} //= free_port()}ge;

    return $c;
}

# start_nginx($template, wait_connected => 1): starts an instance, waits
# until it listens on its ports and, when the config has a
# redis_ratelimit_server and Redis runs, until each worker has connected

sub start_nginx {
    my ($self, $template, %opts) = @_;

    my $n = @{ $self->{nginx} };
    my $ndir = "$self->{dir}/nginx$n";
    mkdir $ndir or croak "mkdir $ndir: $!";
    chmod 0755, $ndir;

    my %ports;
    my $conf = $self->expand($template, $ndir, \%ports, %opts);

    open my $fh, '>', "$ndir/nginx.conf" or croak "$ndir/nginx.conf: $!";
    print $fh $conf;
    close $fh;
    chmod 0644, "$ndir/nginx.conf";

    my $inst = RRL::Test::Nginx->new(
        t => $self,
        dir => $ndir,
        ports => \%ports,
        conf => $conf,
        index => $n,
    );
    push @{ $self->{nginx} }, $inst;

    local $ENV{LD_PRELOAD} = nginx_preload();
    my $out = `@{[nginx_binary()]} -p $ndir/ -c $ndir/nginx.conf -e $ndir/error.log 2>&1`;
    croak "nginx$n failed to start (rc " . ($? >> 8) . "): $out"
        . read_file("$ndir/error.log") if $?;

    $inst->wait_started;

    my $workers = ($conf =~ /^\s*worker_processes\s+(\d+)/m) ? $1 : 1;
    my $wait = $opts{wait_connected}
        // ($conf =~ /^\s*redis_ratelimit_server\s/m && $self->redis_running);
    $inst->wait_log(qr/redis_ratelimit: connected to/, $workers, 5)
        or Test::More::diag("nginx$n: workers did not report a connection "
            . "to Redis within 5 s")
        if $wait;

    return $inst;
}

sub nginx { $_[0]{nginx}[$_[1] // 0] }

# nginx_t($template): nginx -t on a config; returns ($output, $exit_code,
# $conf_file, $conf_text)

sub nginx_t {
    my ($self, $template, %opts) = @_;

    my $n = $self->{nt}++;
    my $tdir = "$self->{dir}/conftest$n";
    mkdir $tdir or croak "mkdir $tdir: $!";
    chmod 0755, $tdir;

    my %ports;
    my $conf = $self->expand($template, $tdir, \%ports, %opts);
    my $file = "$tdir/nginx.conf";

    open my $fh, '>', $file or croak "$file: $!";
    print $fh $conf;
    close $fh;
    chmod 0644, $file;

    local $ENV{LD_PRELOAD} = nginx_preload();
    my $out = `@{[nginx_binary()]} -t -p $tdir/ -c $file -e $tdir/error.log 2>&1`;
    my $rc = $? >> 8;

    return ($out, $rc, $file, $conf);
}

# line_of($text, qr/re/, $nth): the 1-based number of the $nth (default 1)
# line of $text that matches

sub line_of {
    my ($text, $re, $nth) = @_;
    $nth //= 1;
    my @lines = split /\n/, $text, -1;
    for my $i (0 .. $#lines) {
        next unless $lines[$i] =~ $re;
        return $i + 1 if --$nth == 0;
    }
    croak "no line matches $re";
}

sub stop_all {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    $_->stop for grep { defined } @{ $self->{nginx} || [] };
    $self->run_cleanups;
    $self->stop_redis;
}

# add_cleanup($code): runs once, after every nginx has stopped, when the
# file ends (done_testing) or dies (END): e.g. stops a Redis Cluster or
# sentinels started by RRL::Cluster or RRL::Sentinel

sub add_cleanup {
    my ($self, $code) = @_;
    push @{ $self->{cleanups} }, $code;
    return $self;
}

# register_servers($obj, \@registry): the common part of RRL::Cluster's
# and RRL::Sentinel's new(), for servers of their own under this test's
# directory: creates $obj->{dir} (world-readable), keeps $obj->{t} weak,
# puts $obj in the caller's @registry (weakly, for its END) and has
# $obj->stop run with this test's cleanups. Returns $obj.

sub register_servers {
    my ($self, $obj, $registry) = @_;

    $obj->{t} = $self;
    Scalar::Util::weaken($obj->{t});

    mkdir $obj->{dir};
    chmod 0755, $obj->{dir};

    push @$registry, $obj;
    Scalar::Util::weaken($registry->[-1]);
    my $weak = $obj;
    Scalar::Util::weaken($weak);
    $self->add_cleanup(sub { $weak->stop if $weak });

    return $obj;
}

sub run_cleanups {
    my ($self) = @_;
    return unless $self->{owner} == $$;
    while (my $code = pop @{ $self->{cleanups} || [] }) {
        eval { $code->(); 1 } or Test::More::diag("cleanup failed: $@");
    }
}

# done_testing: stops every nginx, then checks that no error log has
# [alert], [crit] or [emerg] lines, exit-time ones included

sub done_testing {
    my ($self) = @_;

    $_->stop for @{ $self->{nginx} };

    for my $inst (@{ $self->{nginx} }) {
        my @ignore = @{ $inst->{ignore_log} || [] };
        my @bad = grep { my $l = $_; !grep { $l =~ $_ } @ignore }
            grep { /\[(alert|crit|emerg)\]/ } $inst->log_lines;
        Test::More::ok(!@bad,
            "nginx$inst->{index}: no alert, crit or emerg in error.log")
            or Test::More::diag(join "\n", @bad);
    }

    $self->check_error_logs unless $self->{checked_error_logs};

    # under ASan/UBSan (scripts/test.sh with RRL_ASAN=1) reports go to files
    my @reports = map { /log_path=([^:]+)/ ? glob("$1.*") : () }
        grep { defined } @ENV{qw(ASAN_OPTIONS UBSAN_OPTIONS)};
    if (grep { defined } @ENV{qw(ASAN_OPTIONS UBSAN_OPTIONS)}) {
        Test::More::ok(!@reports, 'no sanitizer reports')
            or Test::More::diag(join '', map { read_file($_) } @reports);
    }

    $self->run_cleanups;
    $self->stop_redis;
    Test::More::done_testing();
}

# check_error_logs: stops every nginx and asserts that no error.log has a
# sanitizer report or a worker crash (sanitizer reports of nginx workers
# may land in error.log, their stderr, rather than in ASAN_OPTIONS'
# log_path; a worker that died may be logged only at [notice]).
# done_testing calls it, unless the file did earlier.

sub check_error_logs {
    my ($self) = @_;

    $self->{checked_error_logs} = 1;
    $_->stop for @{ $self->{nginx} };

    for my $inst (@{ $self->{nginx} }) {
        my @ignore = @{ $inst->{ignore_log} || [] };
        my @bad = grep { my $l = $_; !grep { $l =~ $_ } @ignore }
            grep { /AddressSanitizer|LeakSanitizer|runtime error:|exited on signal|exited with code [1-9]/ }
            $inst->log_lines;
        Test::More::ok(!@bad, "nginx$inst->{index}: no sanitizer report or "
            . "crash in error.log")
            or Test::More::diag(join "\n", @bad[0 .. ($#bad < 19 ? $#bad : 19)]);
    }
}

sub DESTROY {
    my ($self) = @_;
    local ($?, $@, $!);
    $self->stop_all;
}

END {
    local $?;
    $_->stop_all for grep { defined } @instances;
}


############################################################################
# HTTP

# http($port, $method, $uri, headers => {...} or [...], timeout => 5,
# body => ...): one HTTP/1.0 request on its own connection. Returns
# {status (undef when the connection closed with no response), reason,
# h => {lc name => last value}, hl => [[name, value], ...], n => {lc name =>
# count}, body, raw, time (seconds), error}

sub http {
    my ($port, $method, $uri, %o) = @_;
    my $s = http_send($port, $method, $uri, %o) or return {
        status => undef, error => "connect: $!", h => {}, n => {}, hl => [],
        body => '', raw => '', time => 0 };
    return http_read($s, %o);
}

sub http_request_text {
    my ($method, $uri, %o) = @_;
    my @h = ref $o{headers} eq 'HASH' ? %{ $o{headers} }
          : ref $o{headers} eq 'ARRAY' ? @{ $o{headers} } : ();
    my $req = "$method $uri HTTP/1.0\r\nHost: localhost\r\n";
    while (my ($k, $v) = splice @h, 0, 2) {
        $req .= "$k: $v\r\n";
    }
    $req .= "Content-Length: " . length($o{body}) . "\r\n" if defined $o{body};
    $req .= "\r\n";
    $req .= $o{body} if defined $o{body};
    return $req;
}

sub http_send {
    my ($port, $method, $uri, %o) = @_;
    my $start = time;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port,
        Proto => 'tcp', Timeout => 5) or return undef;
    binmode $s;
    $s->autoflush(1);
    ${*$s}{rrl_start} = $start;
    my $req = http_request_text($method, $uri, %o);
    my $off = 0;
    while ($off < length $req) {
        my $w = syswrite($s, $req, length($req) - $off, $off);
        last unless defined $w;
        $off += $w;
    }
    return $s;
}

sub http_read {
    my ($s, %o) = @_;
    my $timeout = $o{timeout} // 5;
    my $start = ${*$s}{rrl_start} // time;
    my $deadline = time + $timeout;
    my ($raw, $error) = ('', undef);
    my $sel = IO::Select->new($s);

    while (1) {
        my $left = $deadline - time;
        if ($left <= 0) { $error = 'timeout'; last; }
        next unless $sel->can_read($left);
        my $n = sysread($s, my $buf, 65536);
        if (!defined $n) { $error = "read: $!"; last; }
        last if $n == 0;
        $raw .= $buf;
    }
    my $elapsed = time - $start;
    close $s;

    my $r = parse_response($raw);
    $r->{time} = $elapsed;
    $r->{error} //= $error;
    return $r;
}

sub parse_response {
    my ($raw) = @_;
    my $r = { status => undef, reason => undef, h => {}, n => {}, hl => [],
        body => '', raw => $raw };
    return $r if $raw eq '';

    my ($head, $body) = split /\r\n\r\n/, $raw, 2;
    my @lines = split /\r\n/, $head;
    my $sl = shift @lines // '';
    if ($sl =~ m{^HTTP/\d\.\d (\d{3})(?: (.*))?$}) {
        $r->{status} = $1 + 0;
        $r->{reason} = $2;
    } else {
        $r->{error} = "bad status line: $sl";
    }
    for (@lines) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        push @{ $r->{hl} }, [$k, $v];
        $r->{h}{lc $k} = $v;
        $r->{n}{lc $k}++;
    }
    $r->{body} = $body // '';
    return $r;
}

# http_parallel($port, @uris): sends every request before reading any reply
# (one connection each); returns the responses in the same order

sub http_parallel {
    my ($port, @uris) = @_;
    my @s = map { http_send($port, 'GET', $_) } @uris;
    return map { $_ ? http_read($_) : { status => undef, error => 'connect',
        h => {}, n => {}, hl => [], body => '', raw => '' } } @s;
}

# opens a connection, sends a request and resets the connection (RST)
# without reading the response: a client that goes away
sub http_abort {
    my ($port, $uri, $delay) = @_;
    my $s = http_send($port, 'GET', $uri) or return;
    sleep $delay if $delay;
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0));
    close $s;
}


############################################################################

package RRL::Test::Nginx;

use strict;
use warnings;

use Carp qw(croak);
use IO::Socket::INET;
use Scalar::Util ();
use Time::HiRes qw(time sleep);

sub new {
    my ($class, %a) = @_;
    my $self = bless { %a, pid => undef, stopped => 0 }, $class;
    Scalar::Util::weaken($self->{t});
    return $self;
}

sub port { $_[0]{ports}{ $_[1] // 0 } }
sub dir { $_[0]{dir} }
sub conf { $_[0]{conf} }
sub error_log { "$_[0]{dir}/error.log" }
sub access_log { "$_[0]{dir}/access.log" }

sub log_text { RRL::Test::read_file($_[0]->error_log) }
sub log_lines { split /\n/, $_[0]->log_text }

# lines of error.log matching $re
sub grep_log {
    my ($self, $re) = @_;
    return grep { $_ =~ $re } $self->log_lines;
}

# waits until error.log has $count lines matching $re
sub wait_log {
    my ($self, $re, $count, $timeout) = @_;
    $count //= 1;
    my $deadline = time + ($timeout // 5);
    while (time < $deadline) {
        return 1 if $self->grep_log($re) >= $count;
        sleep 0.02;
    }
    return 0;
}

sub read_pid {
    my ($self) = @_;
    my $p = RRL::Test::read_file("$self->{dir}/nginx.pid");
    return $p =~ /^(\d+)/ ? $1 : undef;
}

sub wait_started {
    my ($self) = @_;
    my $deadline = time + 10;

    while (time < $deadline) {
        $self->{pid} //= $self->read_pid;
        my $up = defined $self->{pid};
        for my $port (values %{ $self->{ports} }) {
            my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                PeerPort => $port, Proto => 'tcp');
            if ($s) { close $s } else { $up = 0 }
        }
        return 1 if $up;
        sleep 0.02;
    }

    croak "nginx$self->{index} did not start: " . $self->log_text;
}

# the pids of the master's children (workers), sorted
sub worker_pids {
    my ($self) = @_;
    my $pid = $self->{pid} // $self->read_pid or return ();
    my @p = sort { $a <=> $b } grep { alive($_) }
        map { /(\d+)/ ? $1 : () } `ps --ppid $pid -o pid= 2>/dev/null`;
    return @p;
}

# ignore_log(qr/re/): done_testing does not count [alert], [crit] or
# [emerg] lines of this instance matching re (for an expected, reported
# failure, e.g. in a TODO test)
sub ignore_log {
    my ($self, $re) = @_;
    push @{ $self->{ignore_log} }, $re;
    return $self;
}

sub alive {
    my ($pid) = @_;
    return 0 unless kill 0, $pid;
    # reparented to an init that may not reap: a zombie is gone too
    my $stat = RRL::Test::read_file("/proc/$pid/stat");
    return 0 if $stat =~ /^\d+ \(.*\) Z/s;
    return 1;
}

# graceful stop (QUIT, so exit-time checks such as "open socket left" run),
# then TERM and KILL if it hangs; waits until the master is gone
sub stop {
    my ($self) = @_;
    return if $self->{stopped};
    $self->{stopped} = 1;

    my $pid = $self->{pid} // $self->read_pid or return;

    for my $sig (qw(QUIT TERM KILL)) {
        kill $sig, $pid or last;
        my $deadline = time + ($sig eq 'KILL' ? 5 : 10);
        while (time < $deadline) {
            return 1 unless alive($pid);
            sleep 0.02;
        }
        Test::More::diag("nginx$self->{index} (pid $pid) did not exit on $sig");
    }
}

# reload($template): nginx -s reload, with a new config template if given
# (same ports and directory); waits until the new workers have started and,
# when Redis runs, connected
sub reload {
    my ($self, $template) = @_;
    my $t = $self->{t};

    if (defined $template) {
        $self->{conf} = $t->expand($template, $self->{dir}, $self->{ports});
        open my $fh, '>', "$self->{dir}/nginx.conf" or croak "nginx.conf: $!";
        print $fh $self->{conf};
        close $fh;
    }

    my $workers = ($self->{conf} =~ /^\s*worker_processes\s+(\d+)/m) ? $1 : 1;
    my @old = map { /start worker process (\d+)/ ? $1 : () } $self->log_lines;
    my $started = @old;
    my $connected = () = $self->grep_log(qr/redis_ratelimit: connected to/);

    kill 'HUP', $self->{pid} or croak "kill HUP nginx$self->{index}: $!";

    $self->wait_log(qr/start worker process /, $started + $workers, 10)
        or croak "nginx$self->{index}: no new workers after reload: "
            . $self->log_text;

    # the old workers gone: no request may reach them any more
    my $deadline = time + 10;
    while (time < $deadline && grep { alive($_) } @old) {
        sleep 0.02;
    }
    Test::More::diag("nginx$self->{index}: old workers still alive after reload")
        if grep { alive($_) } @old;

    if ($self->{conf} =~ /^\s*redis_ratelimit_server\s/m && $t->redis_running) {
        $self->wait_log(qr/redis_ratelimit: connected to/, $connected + $workers, 5)
            or Test::More::diag("nginx$self->{index}: new workers did not "
                . "connect to Redis after reload");
    }

    return $self;
}

sub http {
    my ($self, $method, $uri, %o) = @_;
    my $port = $self->port(delete $o{port});
    return RRL::Test::http($port, $method, $uri, %o);
}

sub get { my ($self, $uri, %o) = @_; $self->http('GET', $uri, %o) }

# GET /metrics (or uri): { 'name{labels}' => value }, and the response
sub metrics {
    my ($self, $uri) = @_;
    my $r = $self->get($uri // '/metrics');
    my %m;
    for (split /\n/, $r->{body} // '') {
        next if /^#/;
        my ($k, $v) = /^(\S+) (\S+)$/ or next;
        $m{$k} = $v;
    }
    return (\%m, $r);
}

sub parallel {
    my ($self, @uris) = @_;
    return RRL::Test::http_parallel($self->port, @uris);
}

sub abort {
    my ($self, $uri, $delay) = @_;
    RRL::Test::http_abort($self->port, $uri, $delay);
}

1;
